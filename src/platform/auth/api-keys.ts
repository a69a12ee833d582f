import { createHash } from 'node:crypto';

/**
 * What a partner API key may do (CONTRACT §10; the route table is in docs/api.md#keys-and-scopes):
 * `read` every GET (and `/metrics`), `register` coupon registration, `money` adjustments,
 * `operate` reconcile, resolutions, quarantine replays and the wallet outbox's retry, skip, pause
 * and resume.
 */
export const SCOPES = ['read', 'register', 'money', 'operate'] as const;
export type Scope = (typeof SCOPES)[number];

/** A configured key of `OPS_API_KEYS`; the secret itself is not kept, only its SHA-256. */
export interface ApiKey {
  /** 1..64 of `A-Z a-z 0-9 . _ -`: recorded as the actor of what the key does. */
  name: string;
  scopes: readonly Scope[];
  /** SHA-256 of the secret (32 bytes). */
  digest: Buffer;
  /** A bare entry (no name, no scopes): every scope, name `key-<n>`. */
  legacy: boolean;
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;
/** A plain secret travels as `Bearer <secret>`: visible ASCII without spaces, at least 16 of them. */
const PLAIN_SECRET = /^[\x21-\x7e]{16,}$/;
const SHORT_SECRET = 'the secret must be at least 16 visible ASCII characters, no spaces';
const HASHED_SECRET = /^sha256:([0-9a-fA-F]{64})$/;

/**
 * Parses `OPS_API_KEYS`: comma-separated entries `name:scopes:secret` (`scopes` `+`-joined, the
 * secret plain or `sha256:<64 hex>` of it), or a bare key (every scope, name `key-<n>`, n its
 * position from 1); every plain secret, a bare key's too, is 16+ visible ASCII characters.
 * Problems name the entry by its position, never a secret.
 * @throws Error listing every problem (duplicate names or secrets, unknown scopes, bad hashes).
 */
export function parseApiKeys(text: string): ApiKey[] {
  const entries = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (!entries.length) throw new Error('lists no key');
  const problems: string[] = [];
  const keys: ApiKey[] = [];
  const names = new Map<string, number>();
  const digests = new Map<string, number>();
  entries.forEach((entry, i) => {
    const position = i + 1;
    const key = parseEntry(entry, position, problems);
    if (!key) return;
    const first = names.get(key.name);
    if (first !== undefined) problems.push(`entry ${position}: name ${key.name} is also entry ${first}'s`);
    else names.set(key.name, position);
    const hex = key.digest.toString('hex');
    const same = digests.get(hex);
    if (same !== undefined) problems.push(`entry ${position}: same secret as entry ${same}`);
    else digests.set(hex, position);
    keys.push(key);
  });
  if (problems.length) throw new Error(problems.join('; '));
  return keys;
}

function parseEntry(entry: string, position: number, problems: string[]): ApiKey | undefined {
  if (!entry.includes(':')) {
    // A bare key holds every scope: the same minimum as a named key's secret.
    if (PLAIN_SECRET.test(entry))
      return { name: `key-${position}`, scopes: [...SCOPES], digest: sha256(entry), legacy: true };
    problems.push(`entry ${position}: ${SHORT_SECRET}`);
    return undefined;
  }
  const parts = /^([^:]*):([^:]*):(.*)$/s.exec(entry);
  if (!parts) {
    problems.push(`entry ${position}: must be name:scopes:secret (or a bare key without colons)`);
    return undefined;
  }
  const [, name, scopeList, secret] = parts;
  const before = problems.length;
  if (!NAME.test(name)) problems.push(`entry ${position}: the name must be 1..64 of A-Z a-z 0-9 . _ -`);
  const scopes = [...new Set(scopeList.split('+'))];
  if (!scopes.every((s): s is Scope => (SCOPES as readonly string[]).includes(s)))
    problems.push(`entry ${position}: scopes must be a +-joined set of ${SCOPES.join(', ')}`);
  let digest: Buffer | undefined;
  if (secret.startsWith('sha256:')) {
    const hex = HASHED_SECRET.exec(secret)?.[1];
    if (hex) digest = Buffer.from(hex, 'hex');
    else problems.push(`entry ${position}: a hashed secret must be sha256: and 64 hex digits`);
  } else if (PLAIN_SECRET.test(secret)) {
    digest = sha256(secret);
  } else {
    problems.push(`entry ${position}: ${SHORT_SECRET}`);
  }
  if (problems.length > before || !digest) return undefined;
  return { name, scopes: scopes as Scope[], digest, legacy: false };
}

/** SHA-256 of a presented or configured secret. */
export function sha256(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}
