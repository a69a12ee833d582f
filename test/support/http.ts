/** A `fetch` answer read to the end. */
export interface ReadAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * `fetch(url, init)` with the body read to the end. A body left unread keeps its keep-alive socket
 * paused: it never sees the server close, and stays open until the test process exits, where
 * Node's exit clean-up has to close it (a reliability run once hung there). Tests that need only
 * the status or headers use this instead of a bare `fetch`.
 */
export async function fetchRead(url: string, init?: RequestInit): Promise<ReadAnswer> {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/**
 * The player moves `amount` EUR in or out of `account` in the stand-in wallet at `walletUrl`
 * (`POST /accounts/{id}/deposits|withdrawals`, docs/simulator.md#wallet), outside the receiver;
 * asserts the 200.
 */
export async function moveInWallet(
  walletUrl: string,
  account: string,
  kind: 'deposits' | 'withdrawals',
  amount: string,
): Promise<void> {
  const answer = await fetchRead(`${walletUrl}/accounts/${encodeURIComponent(account)}/${kind}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amount, currency: 'EUR' }),
  });
  expect(answer.status).toBe(200);
}
