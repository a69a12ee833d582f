import pg from 'pg';

/** Drops the template database and stops PgBouncer and the embedded server, if started. */
export default async function globalTeardown(): Promise<void> {
  const adminUrl = process.env.TEST_ADMIN_URL;
  const template = process.env.TEST_TEMPLATE_DB;
  if (adminUrl && template) {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
    await client.end();
  }
  await (globalThis as { __pgBouncer?: { stop(): Promise<void> } }).__pgBouncer?.stop();
  await (globalThis as { __embeddedPg?: { stop(): Promise<void> } }).__embeddedPg?.stop();
}
