#!/usr/bin/env node
// The `wum` command: runs the TypeScript CLI (src/cli/main.ts) through tsx, as `npm start` runs the server.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
