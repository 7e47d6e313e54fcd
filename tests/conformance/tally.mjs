// Tallies one conformance run from the suite's results directory (-o DIR), the way the suite
// judges it against a baseline, and prints one closing line:
//   LABEL: P passed, F failed, S skipped
// A baseline entry is either a whole scenario ("name": it needs the suite's fixtures) or one
// check of a scenario ("name:check-id": that check needs a fixture, every other check of the
// scenario must pass). passed: scenarios whose failing checks are all listed per check, or that
// fail nothing; skipped: failing scenarios listed whole; failed: anything else failing, plus
// listed entries that now pass (stale). With a requirement set (REVISION), only the scenarios it
// scores count; the rest are reported as not scored. Exits 1 if anything failed.
//
//   node tally.mjs RESULTS-DIR EXPECTED-FAILURES.yml [LABEL] [REVISION]
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { parse } from 'yaml';

const [dir, baselineFile, label = 'conformance', revision] = process.argv.slice(2);
const entries = parse(readFileSync(baselineFile, 'utf8'))?.server ?? [];
const whole = new Set(entries.filter((e) => !e.includes(':')));
const perCheck = new Map();
for (const e of entries.filter((e) => e.includes(':'))) {
  const [scenario, check] = [e.slice(0, e.indexOf(':')), e.slice(e.indexOf(':') + 1)];
  perCheck.set(scenario, (perCheck.get(scenario) ?? new Set()).add(check));
}

let scored = null;
if (revision) {
  const require = createRequire(import.meta.url);
  const pkg = dirname(require.resolve('@modelcontextprotocol/conformance/package.json'));
  const file = join(pkg, 'requirements', `${revision}.yaml`);
  if (!existsSync(file)) {
    console.log(`no requirement set ${revision} in the suite`);
    process.exit(1);
  }
  scored = new Set(parse(readFileSync(file, 'utf8')).server ?? []);
}

// Failing checks per scenario (several result directories of one scenario are merged).
const failing = new Map();
for (const entry of readdirSync(dir)) {
  const match = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(entry);
  if (!match) continue;
  const checks = JSON.parse(readFileSync(`${dir}/${entry}/checks.json`, 'utf8'));
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING').map((c) => c.id);
  const passing = checks.filter((c) => c.status === 'SUCCESS').map((c) => c.id);
  const seen = failing.get(match[1]) ?? { bad: new Set(), passing: new Set() };
  bad.forEach((id) => seen.bad.add(id));
  passing.forEach((id) => seen.passing.add(id));
  failing.set(match[1], seen);
}

let passed = 0;
let failed = 0;
let skipped = 0;
const notScored = [];
for (const [scenario, { bad, passing }] of failing) {
  if (scored && !scored.has(scenario)) {
    notScored.push(`${scenario}${bad.size ? ' (fails)' : ''}`);
    continue;
  }
  const listedChecks = perCheck.get(scenario) ?? new Set();
  if (whole.has(scenario)) {
    if (bad.size) skipped++;
    else {
      failed++;
      console.log(`  stale baseline entry (now passes): ${scenario}`);
    }
    continue;
  }
  const unexpected = [...bad].filter((id) => !listedChecks.has(id));
  const stale = [...listedChecks].filter((id) => passing.has(id));
  if (unexpected.length || stale.length) {
    failed++;
    unexpected.forEach((id) => console.log(`  unexpected failure: ${scenario}:${id}`));
    stale.forEach((id) => console.log(`  stale baseline entry (now passes): ${scenario}:${id}`));
  } else passed++;
}
if (failing.size === 0) {
  console.log('no scenario results found');
  failed++;
}
if (notScored.length) console.log(`  not scored for ${revision}: ${notScored.join(', ')}`);
console.log(`${label}: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed ? 1 : 0);
