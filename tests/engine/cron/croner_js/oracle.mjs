// The independent side of tests/engine/cron/test_cron_differential.py: npm croner, pinned
// in package.json. Reads a JSON list of {expr, zone, start, count} on stdin (start: an
// ISO instant in UTC) and writes one JSON list back: each case's next `count` instants
// strictly after start (ISO, UTC), or {error} when croner refuses the expression.
// domAndDow false: the day-of-month / day-of-week OR rule, croner's default and upstream's.
import { Cron } from "croner";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const out = cases.map(({ expr, zone, start, count }) => {
  let job;
  try {
    job = new Cron(expr, { timezone: zone, domAndDow: false, paused: true });
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
  try {
    return { fires: job.nextRuns(count, new Date(start)).map((d) => d.toISOString()) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  } finally {
    job.stop();
  }
});
process.stdout.write(JSON.stringify(out));
