// Starts the S3-compatible test server (@20minutes/s3rver, a maintained fork of s3rver
// that verifies SigV4 signatures, header and query) on 127.0.0.1 with the bucket
// "sheetlog" and the default credentials S3RVER / S3RVER, and writes
// {"endpoint": "http://127.0.0.1:PORT"} to the file named by --endpoint-file once it
// listens. Usage: node s3rver.js --directory DIR --endpoint-file FILE [--port N]
// Stops on SIGTERM/SIGINT, dropping open connections. scripts/s3rver runs it.
'use strict';
const fs = require('fs');
const path = require('path');

// The fork canonicalizes SigV4 query strings with encodeURIComponent, which leaves
// ! ' ( ) * as they are where AWS's SigV4 (and so every client) percent-encodes them: a
// signed request whose query holds one (a listing's prefix or start-after with a '!')
// is refused with SignatureDoesNotMatch. Encoding them as AWS does fixes that, and
// changes nothing else the server sends that a client reads.
const encodeComponent = globalThis.encodeURIComponent;
globalThis.encodeURIComponent = (text) =>
  encodeComponent(text).replace(
    /[!'()*]/g,
    (ch) => '%' + ch.charCodeAt(0).toString(16).toUpperCase(),
  );

const S3rver = require('@20minutes/s3rver');
const FilesystemStore = require('@20minutes/s3rver/lib/stores/filesystem');
const S3Object = require('@20minutes/s3rver/lib/models/object');

// The fork's ListObjects returns keys in the order its directory walk meets them ("0!"
// before "0", "a/..." before "a"), not S3's byte order, and cuts a page (max-keys,
// start-after) in that order, so paged listings miss keys. This lists as S3 does: every
// key under the prefix in UTF-8 byte order, after start-after, keys and common
// prefixes counted together against max-keys.
FilesystemStore.prototype.listObjects = async function listObjects(bucket, options) {
  const { delimiter = '', startAfter = '', prefix = '', maxKeys = Infinity } = options;
  const bucketPath = this.getBucketPath(bucket);
  const suffix = '._S3rver_object';
  const keys = [];
  for (const filePath of walkPresent(bucketPath)) {
    if (!filePath.endsWith(suffix)) continue;
    const key = filePath.slice(bucketPath.length + 1, -suffix.length);
    if (key.startsWith(prefix)) keys.push(key);
  }
  const bytes = (text) => Buffer.from(text, 'utf8');
  keys.sort((a, b) => Buffer.compare(bytes(a), bytes(b)));
  const after = bytes(startAfter);
  const names = [];
  const commonPrefixes = [];
  let isTruncated = false;
  for (const key of keys) {
    if (startAfter && Buffer.compare(bytes(key), after) <= 0) continue;
    const at = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
    const common = at === -1 ? null : key.slice(0, at + delimiter.length);
    if (common !== null && commonPrefixes[commonPrefixes.length - 1] === common) continue;
    if (names.length + commonPrefixes.length === maxKeys) {
      isTruncated = true;
      break;
    }
    if (common !== null) commonPrefixes.push(common);
    else names.push(key);
  }
  const metadata = await Promise.all(
    names.map((key) => this.getMetadata(bucket, key).catch(() => undefined)),
  );
  return {
    objects: names
      .map((key, i) => metadata[i] && new S3Object(bucket, key, null, metadata[i]))
      .filter(Boolean),
    commonPrefixes,
    isTruncated,
  };
};

// The fork's deleteObject also removes the key's emptied parent directories, by a
// check (readdirSync) and then a recursive rm, which race with other requests: a
// concurrent delete in the same directory removes it between the two, so the check
// throws ENOENT and the whole DeleteObjects answers 500 InternalError (a sheet's purge
// failed so); a put that made its directory just before the rm fails the same way; and
// an object a concurrent put wrote into a directory judged empty would go with it.
// Empty directories are harmless here (a key "a" is the file "a._S3rver_object", never
// the directory "a/"), so this deletes the object's files and leaves the directories.
FilesystemStore.prototype.deleteObject = async function deleteObject(bucket, key) {
  await Promise.all(
    ['object', 'object.md5', 'metadata.json'].map((resource) =>
      fs.promises.unlink(this.getResourcePath(bucket, key, resource)).catch((err) => {
        if (err.code !== 'ENOENT') throw err;
      }),
    ),
  );
};

// The fork's walk (readdirSync, then statSync of each entry) throws when a file or
// directory goes between the two, and a listing answered 500: this one skips what a
// concurrent delete removed.
function* walkPresent(dir) {
  let names;
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return;
    throw err;
  }
  for (const name of names) {
    const filePath = path.posix.join(dir, name);
    let stats;
    try {
      stats = fs.statSync(filePath);
    } catch (err) {
      if (err.code === 'ENOENT') continue;
      throw err;
    }
    if (stats.isDirectory()) yield* walkPresent(filePath);
    else yield filePath;
  }
}

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
// A stopped store must answer nothing: close() alone stops accepting connections but
// serves those already open (a request in progress, and anything sent on its keep-alive
// connection after it) until they end, so tests that stop the store saw it answer.
const stop = () => {
  server.close().then(() => process.exit(0));
  if (server.httpServer) server.httpServer.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
