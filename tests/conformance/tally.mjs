// Tallies a conformance run from the suite's results directory (-o DIR), the way the suite
// judges it against a baseline, and prints one closing line:
//   conformance: P passed, F failed, S skipped
// passed: scenarios with no FAILURE or WARNING check; skipped: failing scenarios listed in the
// expected-failures baseline (they need the suite's fixtures); failed: failing scenarios not
// listed, plus listed ones that passed (stale entries). Exits 1 if anything failed.
//
//   node tally.mjs RESULTS-DIR EXPECTED-FAILURES.yml [LABEL]
import { readFileSync, readdirSync } from 'node:fs';
import { parse } from 'yaml';

const [dir, baselineFile, label = 'conformance'] = process.argv.slice(2);
const baseline = new Set(parse(readFileSync(baselineFile, 'utf8'))?.server ?? []);
const failing = new Map();
for (const entry of readdirSync(dir)) {
  const match = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(entry);
  if (!match) continue;
  const checks = JSON.parse(readFileSync(`${dir}/${entry}/checks.json`, 'utf8'));
  const bad = checks.some((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  failing.set(match[1], (failing.get(match[1]) ?? false) || bad);
}
let passed = 0;
let failed = 0;
let skipped = 0;
for (const [scenario, bad] of failing) {
  const listed = baseline.has(scenario);
  if (bad && listed) skipped++;
  else if (bad || listed) {
    failed++;
    console.log(`  ${bad ? 'unexpected failure' : 'stale baseline entry (now passes)'}: ${scenario}`);
  } else passed++;
}
if (failing.size === 0) {
  console.log('no scenario results found');
  failed++;
}
console.log(`${label}: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed ? 1 : 0);
