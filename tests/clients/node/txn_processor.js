// Consume-transform-produce (exactly-once) on kafkajs 2.2.4 for the transactions tests; the same flags and
// line protocol as java/TxnProcessor.java and py_txn.py (see tests/clients/txn_drivers.py).
//
// A group consumer (readUncommitted false = read_committed, autoCommit off) on --input; a transactional producer
// (transactionalId = --txn-id). eachBatch (one partition's batch, at most --batch
// records) is one transaction: value "x" + input value to the same partition of --output, sendOffsets with the
// group id (kafkajs has no consumer group metadata), commit -- or abort for every --abort-every-th, after which
// the consumer seeks back to the batch's first offset. A fenced producer (PRODUCER_FENCED, or
// INVALID_PRODUCER_EPOCH, kafkajs's answer for an older epoch) prints "fenced" and exits 0.
'use strict';
const fs = require('fs');
const path = require('path');
const { Kafka } = require(path.join(process.env.KAFKAJS_PREFIX || '.', 'node_modules', 'kafkajs'));

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const opts = { set: [] };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  const key = argv[i].replace(/^--/, '');
  if (key === 'set') opts.set.push(argv[i + 1]);
  else opts[key] = argv[i + 1];
}
const abortEvery = Number(opts['abort-every'] || 0);
const holdAt = Number(opts['hold-at'] || 0);
const limit = Number(opts.batch || 0);
const toStderr = () => ({ namespace, log }) => {
  const { message, ...extra } = log;
  process.stderr.write(`[${namespace}] ${message} ${JSON.stringify(extra)}\n`);
};
const kafka = new Kafka({ clientId: 'harness-kafkajs-txn', brokers: [opts.bootstrap], logCreator: toStderr });
const config = { groupId: opts.group, readUncommitted: false };
const parse = (text) => { try { return JSON.parse(text); } catch (e) { return text; } };
for (const kv of opts.set) config[kv.slice(0, kv.indexOf('='))] = parse(kv.slice(kv.indexOf('=') + 1));
const consumer = kafka.consumer(config);
// Not `idempotent: true`: that makes connect() ask the controller for a (non-transactional) producer id; the
// transactional one comes from the first transaction() (InitProducerId at the transaction coordinator).
const newProducer = () => kafka.producer({ transactionalId: opts['txn-id'], maxInFlightRequests: 1 });
// connect, then InitProducerId: an empty transaction begun and aborted (kafkajs sends no EndTxn for it).
const start = async (p) => { await p.connect(); await (await p.transaction()).abort(); };
let producer = newProducer();
let owned = [];
let n = 0;
let closing = null;
let fenced = false;

const isFenced = (e) => /PRODUCER_FENCED|INVALID_PRODUCER_EPOCH|fenced/i.test(`${e && e.type} ${e && e.message}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const pairs = (assignment) => Object.entries(assignment)
  .flatMap(([topic, ps]) => ps.map((p) => [topic, p]))
  .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
const key = (tp) => `${tp[0]}\u0000${tp[1]}`;

consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
  const next = pairs(payload.memberAssignment);
  const nextKeys = new Set(next.map(key));
  const ownedKeys = new Set(owned.map(key));
  const gone = owned.filter((tp) => !nextKeys.has(key(tp)));
  if (gone.length) emit({ event: 'revoked', partitions: gone, assignment: owned.filter((tp) => nextKeys.has(key(tp))), lost: false });
  emit({ event: 'assigned', partitions: next.filter((tp) => !ownedKeys.has(key(tp))), assignment: next });
  owned = next;
});
// A crash kafkajs recovers from itself (a retriable error: it restarts the consumer, e.g. KafkaJSNoBrokerAvailableError
// once the connection to its only broker failed) is `restarting`, any other `error`: scenarios.stop_all fails on both
// unless the test took the broker away on purpose.
consumer.on(consumer.events.CRASH, ({ payload }) => emit({ event: payload.restart ? 'restarting' : 'error',
                                                           message: String(payload.error) }));

async function shutdown(code) {
  if (!closing) {
    closing = (async () => {
      try { await consumer.disconnect(); } catch (e) { emit({ event: 'error', message: `disconnect: ${e}` }); }
      try { await producer.disconnect(); } catch (e) { /* it may be fenced */ }
      emit({ event: 'closed' });
      process.exit(code);
    })();
  }
  return closing;
}
process.on('SIGTERM', () => shutdown(0));
process.on('SIGINT', () => shutdown(0));

async function transaction(topic, partition, messages, abort, what) {
  const txn = await producer.transaction();
  try {
    await txn.send({ topic: opts.output, messages: messages.map((m) => ({ value: 'x' + m.value.toString(), partition })) });
    if (n === holdAt) {
      emit({ event: 'holding', ...what });
      while (!fs.existsSync(opts['release-file'])) await sleep(50);
    }
    const next = String(BigInt(messages[messages.length - 1].offset) + 1n);
    await txn.sendOffsets({ consumerGroupId: opts.group, topics: [{ topic, partitions: [{ partition, offset: next }] }] });
    if (abort) await txn.abort();
    else await txn.commit();
    return next;
  } catch (e) {
    if (!isFenced(e)) {
      try { await txn.abort(); } catch (again) {
        if (isFenced(again)) throw again;
        emit({ event: 'recreate', error: String(again) });
        try { await producer.disconnect(); } catch (ignored) { /* thrown away */ }
        producer = newProducer();
        await start(producer);  // InitProducerId: fences the old epoch, its transaction is aborted
      }
    }
    throw e;
  }
}

async function main() {
  emit({ event: 'started', client: 'kafkajs' });
  await start(producer);
  emit({ event: 'ready' });
  await consumer.connect();
  await consumer.subscribe({ topic: opts.input, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isStale }) => {
      if (closing || fenced || isStale() || batch.messages.length === 0) return;
      const messages = limit > 0 ? batch.messages.slice(0, limit) : batch.messages;
      n += 1;
      const abort = abortEvery > 0 && n % abortEvery === 0;
      const first = messages[0].offset;
      const what = {
        n,
        records: messages.map((m) => [batch.partition, Number(m.offset), m.value.toString()]),
        offsets: [[batch.topic, batch.partition, Number(BigInt(messages[messages.length - 1].offset) + 1n)]],
      };
      try {
        await transaction(batch.topic, batch.partition, messages, abort, what);
        emit({ event: 'txn', outcome: abort ? 'abort' : 'commit', ...what });
        if (abort) consumer.seek({ topic: batch.topic, partition: batch.partition, offset: first });
        else resolveOffset(messages[messages.length - 1].offset);
      } catch (e) {
        if (isFenced(e)) {
          fenced = true;
          emit({ event: 'fenced', message: String(e) });
          shutdown(0);
          return;
        }
        emit({ event: 'txn', outcome: 'failed', error: String(e), ...what });
        consumer.seek({ topic: batch.topic, partition: batch.partition, offset: first });
      }
      await heartbeat();
    },
  });
}
main().catch((e) => {
  if (isFenced(e)) { emit({ event: 'fenced', message: String(e) }); shutdown(0); return; }
  emit({ event: 'error', message: String(e && e.stack || e) });
  shutdown(1);
});
