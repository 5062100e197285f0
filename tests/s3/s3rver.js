// Starts the S3-compatible test server (@20minutes/s3rver, a maintained fork of s3rver
// that verifies SigV4 signatures, header and query) on 127.0.0.1 with the bucket
// "sheetlog" and the default credentials S3RVER / S3RVER, and writes
// {"endpoint": "http://127.0.0.1:PORT"} to the file named by --endpoint-file once it
// listens. Usage: node s3rver.js --directory DIR --endpoint-file FILE [--port N]
// Stops on SIGTERM/SIGINT. scripts/s3rver runs it.
'use strict';
const fs = require('fs');
const S3rver = require('@20minutes/s3rver');

const args = {};
for (let i = 2; i + 1 < process.argv.length; i += 2) {
  args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
}
fs.mkdirSync(args.directory, { recursive: true });
const server = new S3rver({
  address: '127.0.0.1',
  port: Number(args.port || 0),
  silent: true,
  directory: args.directory,
  configureBuckets: [{ name: 'sheetlog', configs: [] }],
});
server.run().then(
  (address) => {
    const tmp = args['endpoint-file'] + '.tmp';
    fs.writeFileSync(tmp, JSON.stringify({ endpoint: `http://127.0.0.1:${address.port}` }));
    fs.renameSync(tmp, args['endpoint-file']);
  },
  (err) => {
    console.error(`s3rver: ${err.message}`);
    process.exit(1);
  },
);
const stop = () => server.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
