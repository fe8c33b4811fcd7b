#!/usr/bin/env node
// `npx workhorse <command>` in a checkout (after `npm ci`): the @workhorse/core package's own
// command line (lib/enqueue/bin.ts: `migrate`, `--help`), run from the TypeScript source through tsx.
// Installed from the package, the same command runs its built dist/bin.js.
import { register } from "tsx/esm/api";

register();
await import("../lib/enqueue/bin.ts");
