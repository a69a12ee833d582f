import pg from 'pg';

/** Drops the template database and stops the embedded server, if one was started. */
export default async function globalTeardown(): Promise<void> {
  const adminUrl = process.env.TEST_ADMIN_URL;
  const template = process.env.TEST_TEMPLATE_DB;
  if (adminUrl && template) {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
    await client.end();
  }
  await (globalThis as { __embeddedPg?: { stop(): Promise<void> } }).__embeddedPg?.stop();
}
