import { createContext, useCallback, useContext, useEffect, useState } from 'react';
import type { ReactNode } from 'react';
import { api, ApiError, asApiError, forgetKey, storedKey, storeKey, whenUnauthorized } from './api';
import type { Scope } from './api';
import type { WhoAmI } from './types';

/** The signed-in key: its name and scopes (never its secret), and signing out. */
export interface Session {
  who: WhoAmI;
  can: (scope: Scope) => boolean;
  signOut: () => void;
}

const SessionContext = createContext<Session | null>(null);

/** The session of the signed-in operator (inside {@link SessionGate}). */
export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside SessionGate');
  return session;
}

/**
 * Asks the receiver who `key` is (`GET /auth/whoami`); stores the key in this tab's session
 * storage only once the receiver knows it.
 */
async function signIn(key: string): Promise<WhoAmI> {
  const answer = await api<WhoAmI>('/auth/whoami', { key });
  storeKey(key);
  return answer.body;
}

/**
 * Shows `signInForm` until a key is signed in, then `children` with the session. A key kept in
 * session storage is checked again on load; any 401 later signs out with its explanation.
 */
export function SessionGate(props: {
  signInForm: (submit: (key: string) => Promise<void>, problem: ApiError | null, busy: boolean) => ReactNode;
  children: ReactNode;
}) {
  const [who, setWho] = useState<WhoAmI | null>(null);
  const [problem, setProblem] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(() => storedKey() !== null);

  // Asks who `key` is; shows the session, or why not (the key is then forgotten).
  const check = useCallback(
    (key: string) =>
      signIn(key).then(
        (found) => {
          setWho(found);
          setBusy(false);
        },
        (err: unknown) => {
          forgetKey();
          setProblem(asApiError(err));
          setBusy(false);
        },
      ),
    [],
  );
  const submit = useCallback(
    (key: string) => {
      setBusy(true);
      setProblem(null);
      return check(key);
    },
    [check],
  );

  useEffect(() => {
    whenUnauthorized((error) => {
      forgetKey();
      setWho(null);
      setProblem(error);
    });
    // A key kept in this tab (a reload): check it again before showing anything.
    const kept = storedKey();
    if (kept) void check(kept);
  }, [check]);

  const signOut = useCallback(() => {
    forgetKey();
    setWho(null);
    setProblem(null);
  }, []);

  if (!who) return <>{props.signInForm(submit, problem, busy)}</>;
  const session: Session = { who, can: (scope) => who.scopes.includes(scope), signOut };
  return <SessionContext.Provider value={session}>{props.children}</SessionContext.Provider>;
}

/** The state of a GET: its body once loaded, the error of the last try, and a reload. */
export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * GETs `path` (none while null) and again when it changes or on `reload`; with `everyMs`, again
 * every so often while the screen is open (the data stays shown while it reloads).
 */
export function useGet<T>(path: string | null, everyMs?: number): Loaded<T> {
  const [tick, setTick] = useState(0);
  // The last answer, for the path and reload it answered: shown while the same path reloads.
  const [last, setLast] = useState<{ path: string; tick: number; data?: T; error?: ApiError } | null>(null);
  useEffect(() => {
    if (path === null) return;
    let live = true;
    api<T>(path).then(
      (answer) => live && setLast({ path, tick, data: answer.body }),
      (error: unknown) =>
        live &&
        setLast((before) => ({
          path,
          tick,
          data: before?.path === path ? before.data : undefined,
          error: asApiError(error),
        })),
    );
    return () => {
      live = false;
    };
  }, [path, tick]);
  useEffect(() => {
    if (!everyMs || path === null) return;
    const timer = setInterval(() => setTick((n) => n + 1), everyMs);
    return () => clearInterval(timer);
  }, [everyMs, path]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const mine = last !== null && last.path === path;
  return {
    data: mine ? last.data : undefined,
    error: mine ? last.error : undefined,
    loading: path !== null && !(mine && last.tick === tick),
    reload,
  };
}
