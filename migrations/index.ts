import { InitialSchema1764490000000 } from './1764490000000-InitialSchema.js';
import { CallbackHotPath1764580000000 } from './1764580000000-CallbackHotPath.js';

/** Every migration, in order. A migration never changes after it lands; add a new file instead. */
export const MIGRATIONS = [InitialSchema1764490000000, CallbackHotPath1764580000000];
