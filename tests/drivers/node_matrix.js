// node-postgres against sparkwire: tests/integration/test_drivers_node.py runs this and reads
// the JSON it prints (each step's result, or {error, code} where a step failed).
const { Client, Pool } = require('pg');
const Cursor = require('pg-cursor');
const { from: copyFrom, to: copyTo } = require('pg-copy-streams');
const { Readable } = require('stream');

async function step(out, name, fn) {
  try { out[name] = await fn(); } catch (err) { out[name] = { error: String(err.message), code: err.code }; }
}

async function main() {
  const [port, password] = process.argv.slice(2);
  const config = { host: '127.0.0.1', port: Number(port), user: 'materialize', database: 'materialize',
                   password: password || undefined, ssl: password ? { rejectUnauthorized: false } : false };
  const out = {};
  const c = new Client(config);
  await c.connect();
  await step(out, 'create', async () => {
    await c.query('DROP TABLE IF EXISTS nm');
    await c.query('CREATE TABLE nm (id integer, name text, price numeric(10,2), at timestamptz, tags text[])');
    return 'ok';
  });
  await step(out, 'insert', async () => (await c.query(
    'INSERT INTO nm VALUES ($1,$2,$3,$4,$5), ($6,$7,$8,$9,$10)',
    [1, 'one', '1.50', new Date('2024-01-02T03:04:05Z'), ['a', 'b'], 2, 'two', null, null, []])).rowCount);
  await step(out, 'select', async () => (await c.query(
    'SELECT id, name, price, at, tags FROM nm WHERE id >= $1 AND name <> $2 ORDER BY id', [1, 'zz'])).rows);
  await step(out, 'prepared', async () => {
    const q = { name: 'by-id', text: 'SELECT name FROM nm WHERE id = $1', values: [2] };
    const first = (await c.query(q)).rows[0].name;
    const again = (await c.query({ ...q, values: [1] })).rows[0].name;
    return [first, again];
  });
  await step(out, 'savepoint', async () => {
    await c.query('BEGIN');
    await c.query("INSERT INTO nm (id, name) VALUES (10, 'kept')");
    await c.query('SAVEPOINT s1');
    await c.query("INSERT INTO nm (id, name) VALUES (11, 'undone')");
    await c.query('ROLLBACK TO SAVEPOINT s1');
    await c.query('COMMIT');
    return Number((await c.query('SELECT count(*) AS n FROM nm WHERE id >= 10')).rows[0].n);
  });
  await step(out, 'cursor', async () => {
    await c.query('BEGIN');
    const cursor = c.query(new Cursor('SELECT g FROM generate_series(1, 25) AS g ORDER BY g'));
    const sizes = [];
    for (;;) {
      const rows = await cursor.read(10);
      sizes.push(rows.length);
      if (rows.length === 0) break;
    }
    await cursor.close();
    await c.query('COMMIT');
    return sizes;
  });
  await step(out, 'subscribe_cursor', async () => {
    // A SUBSCRIBE read with pg-cursor: the snapshot in pieces, then a change made meanwhile.
    await c.query('BEGIN');
    const cursor = c.query(new Cursor('SUBSCRIBE (SELECT id FROM nm WHERE id < 3) WITHIN TIMESTAMP ORDER BY id'));
    const first = await cursor.read(1);
    const second = await cursor.read(1);
    const writer = new Client(config);
    await writer.connect();
    await writer.query('DELETE FROM nm WHERE id = 1');
    await writer.end();
    const change = await cursor.read(1);
    await cursor.close();
    await c.query('COMMIT');
    return [...first, ...second, ...change].map((r) => `${r.mz_diff}:${r.id}`);
  });
  await step(out, 'copy', async () => {
    const ingest = c.query(copyFrom('COPY nm (id, name) FROM STDIN (FORMAT csv)'));
    await new Promise((resolve, reject) => {
      Readable.from(['20,copied\n', '21,"a,b"\n']).pipe(ingest).on('finish', resolve).on('error', reject);
    });
    const stream = c.query(copyTo('COPY (SELECT id, name FROM nm WHERE id >= 20 ORDER BY id) TO STDOUT (FORMAT csv)'));
    let text = '';
    for await (const chunk of stream) text += chunk.toString();
    return text;
  });
  await step(out, 'notify', async () => {
    const got = new Promise((resolve) => c.once('notification', (n) => resolve(`${n.channel}:${n.payload}`)));
    await c.query('LISTEN nchan');
    await c.query("NOTIFY nchan, 'hi'");
    const result = await Promise.race([got, new Promise((r) => setTimeout(() => r('none'), 3000))]);
    await c.query('UNLISTEN *');
    return result;
  });
  await step(out, 'pool', async () => {
    const pool = new Pool({ ...config, max: 2 });
    const values = await Promise.all([1, 2, 3, 4].map((i) => pool.query('SELECT $1::int + 1 AS v', [i])));
    await pool.end();
    return values.map((r) => r.rows[0].v);
  });
  await step(out, 'error', async () => {
    try { await c.query('SELECT nosuchfunction(1)'); return 'no error'; } catch (err) { return err.code; }
  });
  await step(out, 'after_error', async () => (await c.query('SELECT 42 AS v')).rows[0].v);
  await c.end();
  console.log(JSON.stringify(out));
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
