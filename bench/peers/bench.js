#!/usr/bin/env node
// Peer comparison driver (bench/README.md "Peer comparison").
//
// Runs seed 001's add entry with N concurrent clients in this one Node process, against
// either
//   - dynalite (DynamoDB emulator) through the AWS SDK v3: an Entry table keyed by
//     segment id (partition key S, Binary: the sheet's UUID + segment num 0) and Num
//     (sort key N, Number), the seed's one-letter names; an append is PutItem of
//     N = current + 1 with ConditionExpression attribute_not_exists(N); a
//     ConditionalCheckFailedException is
//     a conflict, after which the client re-learns the head with a Query (Limit 1,
//     ScanIndexForward false) and tries again;
//   - sheetlog's HTTP API: POST /v1/sheets/{id}/entries with expect_seq = the client's
//     next seq; a 409 is a conflict and carries the sheet's next_seq.
// Both with keep-alive connections (one node:http Agent, a socket per client), and the
// same backoff between attempts (the seed's "exponential backoff and jitter": full
// jitter, sleep uniform(0, min(cap, base * 2^(attempt-1)))) and the same attempt limit.
//
// Modes:
//   tracked        each client keeps its idea of the next seq (the seq after its last
//                  acknowledged append, or what a conflict taught it) and writes at it
//                  directly; dynalite: Query the head only after a conflict; sheetlog:
//                  the 409's next_seq.
//   seed           dynalite only: the seed's steps literally, a Query for the head
//                  before every PutItem (one read and one write per add).
//   unconditional  sheetlog only: no expect_seq, the server assigns the seq.
//
// Scenarios: one-1 (1 client, one sheet), one-16 (16 clients, one sheet), own-16 (16
// clients, each on its own sheet). Each scenario gets fresh sheets, a warm-up, then a
// timed window; an append counts when it is acknowledged inside the window, and its
// latency runs from its first attempt (head read included) to the acknowledgement,
// retries and backoff included. After the run every sheet's log is checked: it holds
// entry 0 and exactly the acknowledged appends (no gap, no lost or extra entry).
//
// Usage:
//   node bench.js run --target dynalite|sheetlog --endpoint URL --mode MODE
//                     --label TEXT --out FILE.jsonl [--server-pid PID] [--seconds 8]
//                     [--warmup 1] [--scenarios one-1,one-16,own-16]
//                     [--base-ms 1] [--cap-ms 100] [--max-attempts 20]
//   node bench.js report FILE.jsonl      prints the Markdown tables
'use strict';
// The SDK warns that its releases after January 2027 need Node 22; Debian's is 20.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const fs = require('node:fs');
const http = require('node:http');
const crypto = require('node:crypto');
const { performance } = require('node:perf_hooks');

function parseArgs(argv) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) out[argv[i].slice(2)] = argv[++i];
    else out._.push(argv[i]);
  }
  return out;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

// utime + stime of a process, all its threads, in ms.
function processCpuMs(pid) {
  if (!pid) return null;
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks * 10; // USER_HZ is 100 on Linux
}

const BODY = { ref: 'B2', value: 42 }; // the SetCell of bench/http/append.lua

class Conflict {
  constructor(nextSeq) {
    this.nextSeq = nextSeq; // what the conflict says the next seq is, when it says
  }
}

// ---------------------------------------------------------------- dynalite (AWS SDK)

function dynaliteTarget(endpoint, agent) {
  const {
    DynamoDBClient, CreateTableCommand, PutItemCommand, QueryCommand,
  } = require('@aws-sdk/client-dynamodb');
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
    maxAttempts: 1, // the bench's own backoff is the only retry
    requestHandler: { httpAgent: agent },
  });
  const TABLE = 'Entry';
  const segmentKey = (sheet) => {
    const key = Buffer.alloc(20);
    Buffer.from(sheet.replace(/-/g, ''), 'hex').copy(key, 0);
    key.writeUInt32BE(0, 16); // segment num 0: every append stays in one segment
    return key;
  };
  const putEntry = (sheet, seq, type, body) => client.send(new PutItemCommand({
    TableName: TABLE,
    Item: {
      S: { B: segmentKey(sheet) },
      N: { N: String(seq) },
      C: { N: String(Math.floor(Date.now() / 1000)) },
      T: { S: type },
      V: { N: '1' },
      B: { S: JSON.stringify(body) },
    },
    ConditionExpression: 'attribute_not_exists(#n)',
    ExpressionAttributeNames: { '#n': 'N' },
  }));
  const queryHead = async (sheet) => {
    const out = await client.send(new QueryCommand({
      TableName: TABLE,
      KeyConditionExpression: '#s = :s',
      ExpressionAttributeNames: { '#s': 'S' },
      ExpressionAttributeValues: { ':s': { B: segmentKey(sheet) } },
      ScanIndexForward: false,
      Limit: 1,
    }));
    return Number(out.Items[0].N.N);
  };
  return {
    name: 'dynalite',
    async setup() {
      try {
        await client.send(new CreateTableCommand({
          TableName: TABLE,
          AttributeDefinitions: [
            { AttributeName: 'S', AttributeType: 'B' },
            { AttributeName: 'N', AttributeType: 'N' },
          ],
          KeySchema: [
            { AttributeName: 'S', KeyType: 'HASH' },
            { AttributeName: 'N', KeyType: 'RANGE' },
          ],
          BillingMode: 'PAY_PER_REQUEST',
        }));
      } catch (err) {
        if (err.name !== 'ResourceInUseException') throw err;
      }
    },
    // Create Log without the Segment table: entry 0, type Snapshot, body null. (The seed
    // writes it with the segment in a transaction; dynalite has no TransactWriteItems,
    // and the clients, which know their segment, start add entry at its step 2.)
    async createSheet() {
      const sheet = crypto.randomUUID();
      await putEntry(sheet, 0, 'Snapshot', null);
      return sheet;
    },
    async nextSeq(sheet) {
      return (await queryHead(sheet)) + 1;
    },
    async append(sheet, seq) {
      try {
        await putEntry(sheet, seq, 'SetCell', BODY);
        return seq;
      } catch (err) {
        if (err.name === 'ConditionalCheckFailedException') return new Conflict(undefined);
        throw err;
      }
    },
    async countEntries(sheet) {
      let count = 0;
      let start;
      do {
        const out = await client.send(new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: '#s = :s',
          ExpressionAttributeNames: { '#s': 'S' },
          ExpressionAttributeValues: { ':s': { B: segmentKey(sheet) } },
          Select: 'COUNT',
          ExclusiveStartKey: start,
        }));
        count += out.Count;
        start = out.LastEvaluatedKey;
      } while (start);
      return count;
    },
  };
}

// ---------------------------------------------------------------- sheetlog (HTTP API)

function sheetlogTarget(endpoint, agent) {
  const url = new URL(endpoint);
  const request = (method, path, body) => new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({
      host: url.hostname,
      port: url.port,
      method,
      path,
      agent,
      headers: payload === undefined ? {} : {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(payload),
      },
    }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
        resolve({ status: res.statusCode, json, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
  const expectStatus = (res, status, what) => {
    if (res.status !== status) throw new Error(`${what}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
    return res.json;
  };
  return {
    name: 'sheetlog',
    async setup() {},
    async createSheet() {
      return expectStatus(await request('POST', '/v1/sheets', { snapshot_every: 0 }),
        201, 'create sheet').id;
    },
    async nextSeq(sheet) {
      return expectStatus(await request('GET', `/v1/sheets/${sheet}`), 200, 'get sheet').next_seq;
    },
    // seq undefined: the unconditional append (no expect_seq).
    async append(sheet, seq) {
      const entry = { type: 'SetCell', body: BODY };
      if (seq !== undefined) entry.expect_seq = seq;
      const res = await request('POST', `/v1/sheets/${sheet}/entries`, entry);
      if (res.status === 201) return res.json.seq;
      // 409 {"error": {"code": "ConflictError", "message", "next_seq"}}
      const nextSeq = res.json && res.json.error && res.json.error.next_seq;
      if (res.status === 409 && Number.isInteger(nextSeq)) return new Conflict(nextSeq);
      throw new Error(`append: HTTP ${res.status} ${res.text.slice(0, 200)}`);
    },
    async countEntries(sheet) {
      // Entries 0 .. next_seq - 1, none truncated (snapshot_every 0, no retention).
      return this.nextSeq(sheet);
    },
  };
}

// ---------------------------------------------------------------- the workload

const SCENARIOS = {
  'one-1': { label: '1 client, one sheet', clients: 1, sheets: 1 },
  'one-16': { label: '16 clients, one sheet', clients: 16, sheets: 1 },
  'own-16': { label: '16 clients, own sheet each', clients: 16, sheets: 16 },
};

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function runScenario(target, opts, scenarioName) {
  const scenario = SCENARIOS[scenarioName];
  const sheets = [];
  for (let i = 0; i < scenario.sheets; i++) sheets.push(await target.createSheet());
  const acksPerSheet = new Map(sheets.map((s) => [s, 0]));

  const stats = {
    latencies: [], conflicts: 0, conflictsInWindow: 0, gaveUp: 0, errors: 0, errorSamples: [],
  };
  // warm-up -> measuring (the window) -> done; the clients stop starting appends when
  // done, and what is acknowledged after it does not count.
  let phase = 'warmup';
  let windowStart = 0;
  let windowEnd = 0;
  let cpuAtStart = null;
  let cpuAtEnd = null;
  setTimeout(() => {
    cpuAtStart = { server: processCpuMs(opts.serverPid), client: process.cpuUsage() };
    windowStart = performance.now();
    phase = 'measuring';
  }, opts.warmupMs);
  setTimeout(() => {
    cpuAtEnd = { server: processCpuMs(opts.serverPid), client: process.cpuUsage(cpuAtStart.client) };
    windowEnd = performance.now();
    phase = 'done';
  }, opts.warmupMs + opts.seconds * 1000);

  const backoffMs = (attempt) => Math.random() * Math.min(opts.capMs, opts.baseMs * 2 ** (attempt - 1));

  const acksPerClient = [];
  async function client(sheet, index) {
    acksPerClient[index] = 0;
    let next = opts.mode === 'tracked' ? await target.nextSeq(sheet) : undefined;
    while (phase !== 'done') {
      const start = performance.now();
      for (let attempt = 1; ; attempt++) {
        let result;
        try {
          if (opts.mode === 'seed') next = await target.nextSeq(sheet);
          result = await target.append(sheet, opts.mode === 'unconditional' ? undefined : next);
        } catch (err) {
          stats.errors++;
          if (stats.errorSamples.length < 5) stats.errorSamples.push(String(err.message || err));
          result = null;
        }
        if (typeof result === 'number') {
          acksPerSheet.set(sheet, acksPerSheet.get(sheet) + 1);
          next = result + 1;
          if (phase === 'measuring') {
            stats.latencies.push(performance.now() - start);
            acksPerClient[index]++;
          }
          break;
        }
        if (result instanceof Conflict) {
          stats.conflicts++;
          if (phase === 'measuring') stats.conflictsInWindow++;
        }
        if (attempt >= opts.maxAttempts) {
          if (phase === 'measuring') stats.gaveUp++;
          break;
        }
        await sleep(backoffMs(attempt));
        if (opts.mode === 'tracked') {
          // sheetlog's 409 says where the head is; DynamoDB's conditional failure does
          // not, so the client reads it (the seed's "go back to step 1").
          if (result instanceof Conflict && result.nextSeq !== undefined) next = result.nextSeq;
          else {
            try {
              next = await target.nextSeq(sheet);
            } catch (err) {
              stats.errors++;
              if (stats.errorSamples.length < 5) stats.errorSamples.push(String(err.message || err));
            }
          }
        }
      }
    }
  }

  const loadBefore = loadavg();
  const clients = [];
  for (let i = 0; i < scenario.clients; i++) clients.push(client(sheets[i % sheets.length], i));
  await Promise.all(clients);
  const loadAfter = loadavg();

  // Check every log: entry 0 plus exactly the acknowledged appends.
  const problems = [];
  for (const sheet of sheets) {
    const count = await target.countEntries(sheet);
    const expected = acksPerSheet.get(sheet) + 1;
    if (count !== expected) problems.push(`${sheet}: ${count} entries, ${expected} expected`);
  }

  const sorted = stats.latencies.sort((a, b) => a - b);
  const acked = sorted.length;
  const windowSeconds = (windowEnd - windowStart) / 1000;
  const serverCpuMs = cpuAtStart.server !== null ? cpuAtEnd.server - cpuAtStart.server : null;
  const clientCpuMs = (cpuAtEnd.client.user + cpuAtEnd.client.system) / 1000;
  return {
    label: opts.label,
    target: target.name,
    mode: opts.mode,
    scenario: scenarioName,
    scenarioLabel: scenario.label,
    clients: scenario.clients,
    sheets: scenario.sheets,
    seconds: windowSeconds,
    acked,
    ackedPerSec: acked / windowSeconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    conflicts: stats.conflictsInWindow,
    conflictsPerAck: acked ? stats.conflictsInWindow / acked : null,
    gaveUp: stats.gaveUp,
    // The spread of the acknowledged appends over the clients (fairness).
    minClientAcks: Math.min(...acksPerClient),
    maxClientAcks: Math.max(...acksPerClient),
    errors: stats.errors,
    errorSamples: stats.errorSamples,
    serverCpuUsPerAck: serverCpuMs !== null && acked ? (serverCpuMs * 1000) / acked : null,
    clientCpuUsPerAck: acked ? (clientCpuMs * 1000) / acked : null,
    logCheck: problems.length ? problems.join('; ') : 'ok',
    loadBefore,
    loadAfter,
    date: new Date().toISOString(),
  };
}

async function run(args) {
  const opts = {
    target: args.target,
    endpoint: args.endpoint,
    mode: args.mode || 'tracked',
    label: args.label || `${args.target} ${args.mode}`,
    out: args.out,
    serverPid: args['server-pid'] ? Number(args['server-pid']) : null,
    seconds: Number(args.seconds || 8),
    warmupMs: Number(args.warmup || 1) * 1000,
    baseMs: Number(args['base-ms'] || 1),
    capMs: Number(args['cap-ms'] || 100),
    maxAttempts: Number(args['max-attempts'] || 20),
    scenarios: (args.scenarios || 'one-1,one-16,own-16').split(','),
  };
  const valid = {
    dynalite: ['tracked', 'seed'], sheetlog: ['tracked', 'unconditional'],
  };
  if (!valid[opts.target] || !valid[opts.target].includes(opts.mode) || !opts.endpoint) {
    throw new Error('--target dynalite (--mode tracked|seed) or sheetlog (--mode tracked|unconditional), and --endpoint');
  }
  // One keep-alive socket per client at most; the same Agent settings for both targets.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16, maxFreeSockets: 16 });
  const target = opts.target === 'dynalite'
    ? dynaliteTarget(opts.endpoint, agent) : sheetlogTarget(opts.endpoint, agent);
  await target.setup();
  for (const name of opts.scenarios) {
    if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name}`);
    const result = await runScenario(target, opts, name);
    if (opts.out) fs.appendFileSync(opts.out, `${JSON.stringify(result)}\n`);
    const f = (x, d = 1) => (x === null || Number.isNaN(x) ? '-' : x.toFixed(d));
    console.log(`${result.label} | ${result.scenarioLabel}: ${f(result.ackedPerSec, 0)} acked/s, `
      + `p50 ${f(result.p50Ms, 2)} ms, p99 ${f(result.p99Ms, 2)} ms, ${result.conflicts} conflicts, `
      + `${result.gaveUp} gave up, ${result.errors} errors, per client ${result.minClientAcks}-${result.maxClientAcks} acks, server ${f(result.serverCpuUsPerAck, 0)} us `
      + `+ client ${f(result.clientCpuUsPerAck, 0)} us CPU per ack, log ${result.logCheck}, `
      + `load ${result.loadBefore} -> ${result.loadAfter}`);
    for (const sample of result.errorSamples) console.log(`  error: ${sample}`);
  }
  agent.destroy();
}

// ---------------------------------------------------------------- report

function report(file) {
  const rows = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const labels = [...new Set(rows.map((r) => r.label))];
  const scenarios = [...new Set(rows.map((r) => r.scenario))];
  const find = (label, scenario) => rows.find((r) => r.label === label && r.scenario === scenario);
  const num = (x) => (x >= 1000 ? Math.round(x).toLocaleString('en-US') : String(Math.round(x)));
  const ms = (x) => (x === null || Number.isNaN(x) ? '-' : x < 10 ? x.toFixed(2) : x.toFixed(1));
  const us = (x) => (x === null ? '-' : `${Math.round(x)} µs`);

  const lines = [];
  lines.push('Acknowledged appends/s (p50 / p99 ms of an acknowledged append, retries included):');
  lines.push('');
  lines.push(`| scenario | ${labels.join(' | ')} |`);
  lines.push(`|---|${labels.map(() => '---').join('|')}|`);
  for (const s of scenarios) {
    const cells = labels.map((l) => {
      const r = find(l, s);
      return r ? `${num(r.ackedPerSec)}/s (${ms(r.p50Ms)} / ${ms(r.p99Ms)})` : '-';
    });
    lines.push(`| ${SCENARIOS[s].label} | ${cells.join(' | ')} |`);
  }
  lines.push('');
  lines.push('| system | scenario | acked/s | p50 ms | p99 ms | conflicts (per ack) | gave up | errors '
    + '| acks per client, min-max | server CPU/ack | client CPU/ack | log check | load before -> after |');
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const l of labels) {
    for (const s of scenarios) {
      const r = find(l, s);
      if (!r) continue;
      const perAck = r.conflictsPerAck === null ? '-' : r.conflictsPerAck.toFixed(2);
      lines.push(`| ${l} | ${r.scenarioLabel} | ${num(r.ackedPerSec)} | ${ms(r.p50Ms)} | ${ms(r.p99Ms)} `
        + `| ${r.conflicts} (${perAck}) | ${r.gaveUp} | ${r.errors} | ${r.minClientAcks}-${r.maxClientAcks} `
        + `| ${us(r.serverCpuUsPerAck)} `
        + `| ${us(r.clientCpuUsPerAck)} | ${r.logCheck} | ${r.loadBefore} -> ${r.loadAfter} |`);
    }
  }
  console.log(lines.join('\n'));
}

const args = parseArgs(process.argv.slice(2));
const command = args._[0];
if (command === 'run') {
  run(args).catch((err) => { console.error(err); process.exit(1); });
} else if (command === 'report' && args._[1]) {
  report(args._[1]);
} else {
  console.error('usage: node bench.js run --target ... | node bench.js report FILE.jsonl');
  process.exit(2);
}
