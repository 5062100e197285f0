#!/usr/bin/env node
// Starts dynalite (the npm DynamoDB emulator) on a free loopback port and writes the
// port, one line, to --port-file (a FIFO that run.sh reads, as sheetlog's --port-file).
// dynalite's own CLI cannot listen on port 0 (it falls back to 4567), hence this file.
// Usage: node dynalite-server.js --port-file FILE [--path DIR]
//   --path DIR: LevelDB store on disk in DIR; without it, in memory (memory-level).
'use strict';
const fs = require('node:fs');
const dynalite = require('dynalite');

function arg(name) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const portFile = arg('--port-file');
const path = arg('--path');
if (!portFile) {
  console.error('usage: dynalite-server.js --port-file FILE [--path DIR]');
  process.exit(2);
}
// Tables become ACTIVE at once (the default keeps them CREATING for 500 ms).
const server = dynalite({ path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, '127.0.0.1', () => {
  fs.writeFileSync(portFile, `${server.address().port}\n`);
});
// The store is thrown away: close what closes within a second, then exit.
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    setTimeout(() => process.exit(0), 1000).unref();
    server.close(() => process.exit(0));
  });
}
