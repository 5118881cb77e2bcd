#!/usr/bin/env node
// The installed `catalog` bin: runs the TypeScript entry point unbuilt (Node >= 22.18 strips types).
import('./main.ts');
