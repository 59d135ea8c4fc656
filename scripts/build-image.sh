#!/usr/bin/env bash
# Build the sparkwire image from the repository's Dockerfile with podman or docker
# (whichever is installed; podman first).
#
#   scripts/build-image.sh                      # FROM python:3.11-slim-bookworm
#   scripts/build-image.sh --local-base         # FROM a Debian bookworm made here with
#                                               # debootstrap (no registry needed; root)
#   scripts/build-image.sh -- --network host    # anything after -- goes to `build`
#
# Options:
#   --tag NAME        image to build (default: sparkwire)
#   --base IMAGE      base image (default: python:3.11-slim-bookworm)
#   --local-base      use localhost/debian-minbase:bookworm, building it first if absent
#   --rebuild-base    rebuild that local base even if it exists
#   --mirror URL      Debian mirror for debootstrap (default: http://deb.debian.org/debian;
#                     $SECURITY_MIRROR: http://deb.debian.org/debian-security)
#   --rootfs DIR      debootstrap into DIR and keep it, or reuse the system already
#                     there (default: a temporary directory, removed afterwards)
#   --engine NAME     podman or docker (default: $ENGINE, else podman, else docker)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=sparkwire
base=python:3.11-slim-bookworm
local_base=0
rebuild_base=0
local_base_image=localhost/debian-minbase:bookworm
mirror=http://deb.debian.org/debian
rootfs=""
engine=${ENGINE:-}
build_flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="$2"; shift ;;
    --base) base="$2"; shift ;;
    --local-base) local_base=1 ;;
    --rebuild-base) local_base=1; rebuild_base=1 ;;
    --mirror) mirror="$2"; shift ;;
    --rootfs) rootfs="$2"; shift ;;
    --engine) engine="$2"; shift ;;
    --) shift; build_flags=("$@"); break ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ -z "$engine" ]; then
  if command -v podman >/dev/null 2>&1; then engine=podman
  elif command -v docker >/dev/null 2>&1; then engine=docker
  else echo "neither podman nor docker is installed" >&2; exit 1
  fi
fi

log() { echo "build-image: $*" >&2; }

# A minimal Debian bookworm root file system, made the way the official debian
# images are (deb822 sources with updates and security, no docs or man pages),
# imported as an image. debootstrap needs root (or: sudo scripts/build-image.sh).
build_local_base() {
  command -v debootstrap >/dev/null 2>&1 || { log "install debootstrap first (apt-get install debootstrap)"; exit 1; }
  [ "$(id -u)" = 0 ] || { log "debootstrap needs root"; exit 1; }
  local dir keep=1
  if [ -z "$rootfs" ]; then
    dir=$(mktemp -d "${TMPDIR:-/var/tmp}/sparkwire-rootfs.XXXXXX")
    keep=0
  else
    dir="$rootfs"
    mkdir -p "$dir"
  fi
  # debootstrap mounts /proc and /sys inside; never rm -rf through a mount.
  cleanup_rootfs() {
    local m
    for m in $(findmnt -rn -o TARGET | grep -F "$dir/" | sort -r); do umount -l "$m" || true; done
    [ "$keep" = 1 ] || rm -rf --one-file-system "$dir"
  }
  trap cleanup_rootfs EXIT

  if [ -f "$dir/etc/debian_version" ] && [ ! -d "$dir/debootstrap" ]; then
    log "reusing the bookworm system already in $dir"
  else
    log "debootstrap --variant=minbase bookworm $dir $mirror"
    debootstrap --variant=minbase bookworm "$dir" "$mirror"
  fi

  local security=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
  rm -f "$dir/etc/apt/sources.list"
  cat > "$dir/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat > "$dir/etc/dpkg/dpkg.cfg.d/excludes" <<'EOF'
# As in the -slim images: no documentation, man pages or translations.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
EOF
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/cache/apt/*.bin "$dir"/var/lib/apt/lists/* \
         "$dir"/var/log/* "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/*
  : > "$dir/etc/hostname"
  rm -f "$dir/etc/resolv.conf"  # the container runtime provides it

  log "importing $dir as $local_base_image"
  tar --numeric-owner --xattrs -C "$dir" -c . |
    "$engine" import -c 'CMD ["bash"]' \
      -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      - "$local_base_image"
  cleanup_rootfs
  trap - EXIT
}

if [ "$local_base" = 1 ]; then
  if [ "$rebuild_base" = 1 ] || ! "$engine" image inspect "$local_base_image" >/dev/null 2>&1; then
    build_local_base
  else
    log "using existing $local_base_image (--rebuild-base to remake it)"
  fi
  base=$local_base_image
fi

cmd=("$engine" build)
# podman's default OCI image format has no HEALTHCHECK; the docker format keeps it.
[ "$engine" = podman ] && cmd+=(--format docker)
cmd+=(--build-arg "BASE=$base" -t "$tag" -f "$repo/Dockerfile" "${build_flags[@]}" "$repo")
log "${cmd[*]}"
start=$(date +%s)
"${cmd[@]}"
log "built $tag from $base in $(( $(date +%s) - start )) s"
"$engine" image inspect --format '{{.Size}}' "$tag" 2>/dev/null |
  awk '{ printf "build-image: image size %.0f MB\n", $1 / 1e6 }' >&2 || true
