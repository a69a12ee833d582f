import { jest } from '@jest/globals';

// Each e2e and reliability test file: 30 s per test and hook instead of Jest's 5 s, unless the
// test names its own (jest.config.js says why).
jest.setTimeout(30_000);
