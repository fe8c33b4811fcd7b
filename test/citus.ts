// Test databases on a Citus cluster (WORKHORSE_DISTRIBUTED=1 with DATABASE_URL naming the
// coordinator, as scripts/citus-cluster.sh prints): every new database needs the citus extension
// on the coordinator and on each worker, and the workers registered in it.
import pg from "pg";

/** Whether this run lays its databases out for Citus. */
export function distributedTests(): boolean {
  return process.env.WORKHORSE_DISTRIBUTED === "1";
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function run(url: string, statements: string[]): Promise<pg.QueryResultRow[][]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const out: pg.QueryResultRow[][] = [];
    for (const s of statements) out.push((await c.query(s)).rows);
    return out;
  } finally {
    await c.end();
  }
}

/**
 * Makes the (already created) database at `url` a Citus database with the coordinator's workers:
 * the workers are read from the admin database's pg_dist_node, and the database must exist on them
 * (citus.enable_create_database_propagation creates it there).
 */
export async function prepareCitusDatabase(adminUrl: string, url: string): Promise<void> {
  // Test files start at once; node registration in several new databases at the same time can
  // fail on Citus ("failure on connection marked as essential"), so they take turns.
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query("select pg_advisory_lock(7294301120)");
    await prepare(adminUrl, url);
  } finally {
    await admin.end();
  }
}

/**
 * For the clients' test fixtures (sdk/go, sdk/python): the database at `url` made a Citus database,
 * created on the coordinator at `adminUrl` first when it does not exist.
 */
export async function ensureCitusDatabase(adminUrl: string, url: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const name = new URL(url).pathname.slice(1);
    const { rowCount } = await admin.query("select 1 from pg_database where datname = $1", [name]);
    if (!rowCount) await admin.query(`create database ${pg.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  await prepareCitusDatabase(adminUrl, url);
}

async function prepare(adminUrl: string, url: string): Promise<void> {
  const db = new URL(url).pathname.slice(1);
  const [nodes] = await run(adminUrl, [
    "select nodename, nodeport from pg_dist_node where noderole = 'primary' and groupid <> 0 order by nodeid",
  ]);
  const workers = (nodes ?? []) as { nodename: string; nodeport: number }[];
  if (workers.length === 0)
    throw new Error("WORKHORSE_DISTRIBUTED=1 but the coordinator has no workers in pg_dist_node");
  const coordinator = new URL(adminUrl);
  for (const w of workers) {
    const u = new URL(adminUrl);
    u.hostname = w.nodename;
    u.port = String(w.nodeport);
    await run(withDatabase(u.toString(), db), ["create extension if not exists citus"]);
  }
  await run(url, [
    "create extension if not exists citus",
    `select citus_set_coordinator_host(${pg.escapeLiteral(coordinator.hostname)}, ${Number(coordinator.port || 5432)})`,
    ...workers.map((w) => `select citus_add_node(${pg.escapeLiteral(w.nodename)}, ${Number(w.nodeport)})`),
  ]);
}
