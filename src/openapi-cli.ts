import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ModulesContainer, NestFactory, RouterModule } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { buildOpenApiDocument } from './app.setup.js';
import { CallbacksModule } from './intake/callbacks/callbacks.module.js';
import { loadConfig } from './app.config.js';

/**
 * `npm run openapi`: writes the OpenAPI document of this build to `openapi.json` (or the path
 * given as argument) without a database: the app is created in preview mode (modules and routes,
 * no provider is instantiated; the callback's `RouterModule` mount is registered by hand). Default configuration (`CALLBACK_PATH` /sportapi/callback),
 * whatever the environment says, so the file does not depend on who runs it. The e2e test
 * `openapi.e2e.spec.ts` fails when the served document and the file differ.
 */
async function main(): Promise<void> {
  const config = loadConfig({
    SPORTAPI_WEBHOOK_SECRETS: 'unused-webhook-secret',
    OPS_API_KEYS: 'unused-ops-api-key',
  });
  const app = await NestFactory.create(AppModule.forRoot(config), {
    preview: true,
    logger: false,
    bodyParser: false,
    abortOnError: false,
  });
  // Preview mode instantiates no module, RouterModule included: mount the callback as it would.
  new RouterModule(app.get(ModulesContainer), [{ path: config.http.callbackPath, module: CallbacksModule }]);
  const target = resolve(process.argv[2] ?? 'openapi.json');
  writeFileSync(target, `${JSON.stringify(buildOpenApiDocument(app, config), null, 2)}\n`);
  process.stdout.write(`wrote ${target}\n`);
  await app.close();
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
