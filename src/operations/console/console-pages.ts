import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';

/** Where the operator console is served: its page, its client-side routes and its assets. */
export const CONSOLE_PATH = '/ops';

/** Whether a request path belongs to the console (`/ops`, `/ops/…`; case as Express matches). */
export const isConsolePath = (path: string): boolean => /^\/ops(\/|$)/i.test(path);

/**
 * The console's security headers: helmet's defaults with a strict Content-Security-Policy. Only
 * the app's own files run or style the page (no inline script or style element, no eval);
 * requests go to the app's origin only; images may be `data:` URLs (Chart.js legends); no
 * plugin, frame, base or form target elsewhere.
 */
export function consoleHeaders(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        scriptSrcAttr: ["'none'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'"],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
  });
}

/**
 * Serves the built console (`npm run build`: Vite into `dir`, default `dist/console`) at `/ops`:
 * files under `/ops/assets/` (content-hashed names, cached for a year) and the few root files;
 * every other GET under `/ops` is a client-side route and answers `index.html` (never cached), so
 * a reload or a shared link opens the same screen. A missing asset stays a 404. Without a build
 * the console's paths answer 404 with a message saying how to build it.
 */
export function serveConsole(app: INestApplication, dir: string): void {
  const root = resolve(dir);
  const index = join(root, 'index.html');
  const built = existsSync(index);
  if (built) {
    (app as NestExpressApplication).useStaticAssets(root, {
      prefix: `${CONSOLE_PATH}/`,
      index: false,
      redirect: false,
      fallthrough: true,
      setHeaders: (res, path) =>
        res.setHeader(
          'Cache-Control',
          path.startsWith(join(root, 'assets')) ? 'public, max-age=31536000, immutable' : 'no-cache',
        ),
    });
  }
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!isConsolePath(req.path) || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
    if (/^\/ops\/assets\//i.test(req.path)) return next();
    if (!built) {
      res
        .status(404)
        .type('text/plain')
        .send(`the operator console is not built in ${root}: run npm run build (docs/console.md)\n`);
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index);
  });
}
