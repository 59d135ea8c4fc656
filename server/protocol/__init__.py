"""Pure (I/O-free) PostgreSQL wire protocol v3 codec and SCRAM-SHA-256 server logic."""
