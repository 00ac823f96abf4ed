// One graphile-worker process for benchmarks/bench_queue.py (see graphile.py).
//
//   NODE_PATH=<install>/node_modules BENCH_DATABASE_URL=... node graphile_worker.cjs \
//       --concurrency 16 [--batched] [--schema-only]
//
// --batched: the settings graphile-worker documents for throughput: a local queue of 500
// jobs fetched at once, and completions/failures written in batches (delay 0: whatever has
// finished by the next tick). Without it, graphile-worker's defaults: one job per fetch,
// one statement per completion. The no-op task records its start time the way timing.py
// does (wall clock, seconds, and the harness's send time from the payload); the list goes
// to $BENCH_RECORD when SIGTERM has stopped the runner.
"use strict";

const fs = require("node:fs");
const { Logger, run, runMigrations } = require("graphile-worker");

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};

const connectionString = process.env.BENCH_DATABASE_URL;
const concurrency = Number(value("--concurrency", "1"));
const starts = [];
const sent = [];

function now() {
  // Sub-millisecond wall clock, comparable with Python's time.time() on this machine.
  return (performance.timeOrigin + performance.now()) / 1000;
}

const taskList = {
  noop: async (payload) => {
    starts.push(now());
    sent.push(payload && typeof payload.t === "number" ? payload.t : null);
  },
};

// Warnings and errors only: graphile-worker's default logger writes a line per job at
// "info", which would put console output on its hot path (Conveyor logs nothing per task).
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") console.error(message);
});

function preset() {
  if (!flag("--batched")) return {};
  return {
    worker: {
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  };
}

async function main() {
  // Every concurrent job may hold a connection, plus the listener: the same pool sizing
  // as procrastinate's in peers.py.
  const options = {
    connectionString,
    concurrency,
    maxPoolSize: concurrency + 2,
    noHandleSignals: true,
    taskList,
    preset: preset(),
    logger,
  };
  if (flag("--schema-only")) {
    await runMigrations({ connectionString, logger });
    return;
  }
  const runner = await run(options);
  let stopping = false;
  process.on("SIGTERM", () => {
    if (stopping) return;
    stopping = true;
    runner
      .stop()
      .then(() => {
        const path = process.env.BENCH_RECORD;
        if (path) fs.writeFileSync(path, JSON.stringify({ starts, sent }));
        process.exit(0);
      })
      .catch((error) => {
        console.error(error);
        process.exit(1);
      });
  });
  await runner.promise;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
