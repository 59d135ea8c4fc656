// pgjdbc against sparkwire: tests/integration/test_drivers_jvm.py compiles and runs this,
// printing one tab-separated line per step (or "error <step> <sqlstate> <message>").
import java.io.*;
import java.math.BigDecimal;
import java.sql.*;
import java.util.*;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.copy.CopyManager;

public class DriverMatrix {
    static void out(Object... parts) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < parts.length; i++) { if (i > 0) b.append('\t'); b.append(parts[i]); }
        System.out.println(b);
    }
    static void step(String name, Callable c) {
        try { c.run(); } catch (Exception e) {
            String state = e instanceof SQLException ? ((SQLException) e).getSQLState() : "";
            out("error", name, state, String.valueOf(e.getMessage()).split("\n")[0]);
        }
    }
    interface Callable { void run() throws Exception; }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        Properties p = new Properties();
        p.setProperty("user", args[1]);
        if (args.length > 2) p.setProperty("password", args[2]);
        try (Connection c = DriverManager.getConnection(url, p)) {
            out("connected", c.getMetaData().getDatabaseProductName(), c.getMetaData().getDatabaseProductVersion());
            step("isolation", () -> { c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED); out("isolation", c.getTransactionIsolation()); });
            step("create", () -> { try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS jm");
                s.execute("CREATE TABLE jm (id integer, name text, price numeric(10,2), at timestamptz, flag boolean)"); out("created"); } });
            step("batch", () -> { try (PreparedStatement ps = c.prepareStatement("INSERT INTO jm VALUES (?,?,?,?,?)")) {
                for (int i = 1; i <= 3; i++) {
                    ps.setInt(1, i); ps.setString(2, "n" + i); ps.setBigDecimal(3, new BigDecimal("1.25").multiply(BigDecimal.valueOf(i)));
                    ps.setTimestamp(4, Timestamp.valueOf("2024-01-0" + i + " 10:00:00")); ps.setBoolean(5, i % 2 == 1);
                    ps.addBatch();
                }
                out("batch", Arrays.toString(ps.executeBatch())); } });
            step("types", () -> { try (PreparedStatement ps = c.prepareStatement(
                    "SELECT ?::int2, ?::int4, ?::int8, ?::float4, ?::float8, ?::numeric, ?::text, ?::bool, ?::date, "
                    + "?::timestamp, ?::timestamptz, ?::bytea, ?::uuid, ?::int4[], ?::text[], ?::jsonb")) {
                ps.setShort(1, (short) 7); ps.setInt(2, -2147483648); ps.setLong(3, 9007199254740993L);
                ps.setFloat(4, 2.5f); ps.setDouble(5, -0.125); ps.setBigDecimal(6, new BigDecimal("12345.678901"));
                ps.setString(7, "héllo, \"world\""); ps.setBoolean(8, true); ps.setDate(9, java.sql.Date.valueOf("2024-02-29"));
                ps.setTimestamp(10, Timestamp.valueOf("2024-02-29 13:45:10.123456"));
                ps.setObject(11, java.time.OffsetDateTime.parse("2024-02-29T13:45:10.5Z"));
                ps.setBytes(12, new byte[] {0, 1, (byte) 255});
                ps.setObject(13, java.util.UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"));
                ps.setArray(14, c.createArrayOf("int4", new Integer[] {1, null, 3}));
                ps.setArray(15, c.createArrayOf("text", new String[] {"a", "b c"}));
                ps.setString(16, "{\"k\": [1, 2]}");
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    out("types", rs.getShort(1), rs.getInt(2), rs.getLong(3), rs.getFloat(4), rs.getDouble(5),
                        rs.getBigDecimal(6), rs.getString(7), rs.getBoolean(8), rs.getDate(9), rs.getTimestamp(10),
                        rs.getObject(11, java.time.OffsetDateTime.class), Arrays.toString(rs.getBytes(12)), rs.getObject(13),
                        Arrays.toString((Object[]) rs.getArray(14).getArray()), Arrays.toString((Object[]) rs.getArray(15).getArray()),
                        rs.getString(16));
                } } });
            step("select", () -> { try (PreparedStatement ps = c.prepareStatement("SELECT id, name, price, flag FROM jm WHERE id >= ? AND name <> ? ORDER BY id")) {
                ps.setInt(1, 2); ps.setString(2, "zz");
                try (ResultSet rs = ps.executeQuery()) { while (rs.next()) out("row", rs.getInt(1), rs.getString(2), rs.getBigDecimal(3), rs.getBoolean(4)); } } });
            step("savepoint", () -> {
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.execute("INSERT INTO jm (id, name) VALUES (10, 'kept')");
                    Savepoint sp = c.setSavepoint("sp1");
                    s.execute("INSERT INTO jm (id, name) VALUES (11, 'undone')");
                    c.rollback(sp);
                    c.commit();
                }
                c.setAutoCommit(true);
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM jm WHERE id >= 10")) { rs.next(); out("savepoint", rs.getLong(1)); }
            });
            step("fetchsize", () -> {
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.setFetchSize(2);
                    int n = 0;
                    try (ResultSet rs = s.executeQuery("SELECT g FROM generate_series(1, 7) AS g ORDER BY g")) { while (rs.next()) n++; }
                    out("fetchsize", n);
                }
                c.commit(); c.setAutoCommit(true);
            });
            step("subscribe", () -> {
                // A SUBSCRIBE through a cursor: the snapshot, then a change another session makes.
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.execute("DECLARE sub CURSOR FOR SUBSCRIBE (SELECT id FROM jm WHERE id <= 2) WITHIN TIMESTAMP ORDER BY id");
                    StringBuilder seen = new StringBuilder();
                    try (ResultSet rs = s.executeQuery("FETCH ALL sub")) { while (rs.next()) seen.append(rs.getLong("mz_diff")).append(":").append(rs.getInt("id")).append(" "); }
                    try (Connection w = DriverManager.getConnection(url, p); Statement ws = w.createStatement()) {
                        ws.execute("DELETE FROM jm WHERE id = 1");
                    }
                    int got = 0;
                    while (got == 0) {
                        try (ResultSet rs = s.executeQuery("FETCH ALL sub WITH (timeout = '1s')")) {
                            while (rs.next()) { seen.append(rs.getLong("mz_diff")).append(":").append(rs.getInt("id")).append(" "); got++; }
                        }
                    }
                    out("subscribe", seen.toString().trim());
                }
                c.commit(); c.setAutoCommit(true);
            });
            step("metadata", () -> {
                DatabaseMetaData md = c.getMetaData();
                int t = 0; try (ResultSet rs = md.getTables(null, "public", "jm", null)) { while (rs.next()) t++; }
                int col = 0; try (ResultSet rs = md.getColumns(null, "public", "jm", null)) { while (rs.next()) col++; }
                int pk = 0; try (ResultSet rs = md.getPrimaryKeys(null, "public", "jm")) { while (rs.next()) pk++; }
                int ix = 0; try (ResultSet rs = md.getIndexInfo(null, "public", "jm", false, false)) { while (rs.next()) ix++; }
                int fk = 0; try (ResultSet rs = md.getImportedKeys(null, "public", "jm")) { while (rs.next()) fk++; }
                out("metadata", t, col, pk, ix, fk);
                try (Statement s = c.createStatement()) {
                    s.execute("DROP TABLE IF EXISTS jmk");
                    s.execute("CREATE TABLE jmk (id integer, code text UNIQUE, PRIMARY KEY (id))");
                }
                StringBuilder keys = new StringBuilder();
                try (ResultSet rs = md.getPrimaryKeys(null, "public", "jmk")) {
                    while (rs.next()) keys.append(rs.getString("PK_NAME")).append(":").append(rs.getString("COLUMN_NAME")).append(" ");
                }
                try (ResultSet rs = md.getIndexInfo(null, "public", "jmk", false, false)) {
                    while (rs.next()) keys.append(rs.getString("INDEX_NAME")).append(rs.getBoolean("NON_UNIQUE") ? "~" : "!")
                            .append(rs.getString("COLUMN_NAME")).append(" ");
                }
                out("keys", keys.toString().trim());
            });
            step("copy", () -> {
                CopyManager cm = ((PGConnection) c).getCopyAPI();
                long in = cm.copyIn("COPY jm (id, name) FROM STDIN (FORMAT csv)", new StringReader("20,copied\n21,\"a,b\"\n"));
                StringWriter w = new StringWriter();
                cm.copyOut("COPY (SELECT id, name FROM jm WHERE id >= 20 ORDER BY id) TO STDOUT (FORMAT csv, HEADER)", w);
                out("copy", in, w.toString().replace("\n", "|"));
            });
            step("notify", () -> {
                try (Statement s = c.createStatement()) { s.execute("LISTEN jchan"); s.execute("NOTIFY jchan, 'hello'"); }
                try (Statement s = c.createStatement()) { s.execute("SELECT 1"); }
                PGNotification[] ns = ((PGConnection) c).getNotifications(2000);
                out("notify", ns == null ? 0 : ns.length, ns == null || ns.length == 0 ? "" : ns[0].getName() + ":" + ns[0].getParameter());
                try (Statement s = c.createStatement()) { s.execute("UNLISTEN *"); }
            });
            step("cancel", () -> {
                try (Statement s = c.createStatement()) {
                    new Thread(() -> { try { Thread.sleep(1500); s.cancel(); } catch (Exception e) {} }).start();
                    try { s.executeQuery("SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b"); out("cancel", "not cancelled"); }
                    catch (SQLException e) { out("cancel", e.getSQLState()); }
                }
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT 42")) { rs.next(); out("after_cancel", rs.getInt(1)); }
            });
        }
        out("done");
    }
}
