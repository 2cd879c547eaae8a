// A group consumer on kafkajs for the conformance harness (see docs/CLIENTS.md).
//
// Same flags and stdout line protocol as the other drivers; kafkajs keeps its defaults except
// brokers, groupId, fromBeginning (= auto offset reset earliest) and what the flags ask for.
// kafkajs logs go to stderr so stdout carries only protocol lines.
// kafkajs has no static membership (group.instance.id) and only the round-robin assignor built
// in, so --instance-id and other assignors are refused (the Python side knows this too).
'use strict';
const path = require('path');
const { Kafka, logLevel } = require(path.join(process.env.KAFKAJS_PREFIX || '.', 'node_modules', 'kafkajs'));

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const opts = { topic: [], count: -1, commit: 'explicit', set: [] };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  const key = argv[i].replace(/^--/, '');
  if (key === 'topic' || key === 'set') opts[key].push(argv[i + 1]);
  else opts[key] = argv[i + 1];
}
if (opts['instance-id']) { console.error('kafkajs has no static membership'); process.exit(2); }
if (opts.assignor && opts.assignor !== 'roundrobin') { console.error('kafkajs only has roundrobin'); process.exit(2); }

const toStderr = () => ({ namespace, level, log }) => {
  const { message, ...extra } = log;
  process.stderr.write(`[${namespace}] ${message} ${JSON.stringify(extra)}\n`);
};
// --set ssl.ca=<PEM file> and sasl.mechanism/username/password are the Kafka client's (TLS, SASL); the rest the
// consumer's options.
const client = { clientId: 'harness-kafkajs', brokers: [opts.bootstrap], logCreator: toStderr };
const config = { groupId: opts.group };
if (opts['session-timeout-ms']) config.sessionTimeout = Number(opts['session-timeout-ms']);
const parse = (text) => { try { return JSON.parse(text); } catch (e) { return text; } };  // numbers, booleans
for (const kv of opts.set) {
  const at = kv.indexOf('=');
  const [name, value] = [kv.slice(0, at), kv.slice(at + 1)];
  if (name === 'ssl.ca') client.ssl = { ca: [require('fs').readFileSync(value, 'utf8')] };
  else if (name.startsWith('sasl.')) client.sasl = { ...client.sasl, [name.slice(5)]: value };
  else config[name] = parse(value);
}
const kafka = new Kafka(client);
const consumer = kafka.consumer(config);
const explicit = opts.commit === 'explicit';
const count = Number(opts.count);
let owned = [];
let seen = 0;
let closing = null;

const pairs = (assignment) => Object.entries(assignment)
  .flatMap(([topic, ps]) => ps.map((p) => [topic, p]))
  .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
const key = (tp) => `${tp[0]}\u0000${tp[1]}`;

consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
  // kafkajs is eager: every generation replaces the whole assignment.
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
      emit({ event: 'closed' });
      process.exit(code);
    })();
  }
  return closing;
}
process.on('SIGTERM', () => shutdown(0));
process.on('SIGINT', () => shutdown(0));

async function main() {
  await consumer.connect();
  for (const topic of opts.topic) await consumer.subscribe({ topic, fromBeginning: true });
  emit({ event: 'started', client: 'kafkajs' });
  await consumer.run({
    autoCommit: opts.commit === 'auto',
    eachBatchAutoResolve: true,
    eachBatch: async ({ batch, heartbeat }) => {
      let last = null;
      for (const m of batch.messages) {
        if (closing || (count >= 0 && seen >= count)) break;
        emit({ event: 'record', topic: batch.topic, partition: batch.partition, offset: Number(m.offset),
               value: m.value === null ? null : m.value.toString() });
        last = m.offset;
        seen += 1;
      }
      if (explicit && last !== null) {
        const next = String(BigInt(last) + 1n);
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }]);
        emit({ event: 'committed', offsets: [[batch.topic, batch.partition, Number(next)]] });
      }
      await heartbeat();
      if (count >= 0 && seen >= count) shutdown(0);
    },
  });
}
main().catch((e) => { emit({ event: 'error', message: String(e && e.stack || e) }); shutdown(1); });
