// Checks mermaid files with mermaid's own parser; exits 1 if any file fails.
//
//   npm ci --prefix tests/mermaid
//   node tests/mermaid/validate.mjs tests/mermaid/fixtures/*.mmd
//
// For each file: it must parse as a flowchart, and every quoted node label and subgraph title
// must reach mermaid's diagram model unchanged (its `#<code>;` entity codes intact), which
// catches mermaid's pre-parse rewrites as well as syntax errors.
//
// The fixtures are written by the Rust test
// `export::visualize::tests::mermaid_fixture_files_are_current`, which fails when they drift.
// mermaid needs a DOM (for DOMPurify) even to parse, so jsdom provides one.
import { readFile } from 'node:fs/promises';
import { JSDOM } from 'jsdom';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node validate.mjs FILE.mmd...');
  process.exit(2);
}

const { window } = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false });

// `#<decimal>;` as written in the source, and as mermaid carries it internally.
const fromSource = (text) => text.replace(/#(\d+);/g, (_, code) => String.fromCodePoint(Number(code)));
const fromModel = (text) => text.replace(/\uFB02\u00B0\u00B0(\d+)\u00B6\u00DF/g, (_, code) => String.fromCodePoint(Number(code)));

// The quoted labels of a file: node id or subgraph id -> text with entity codes decoded.
function quotedLabels(text) {
  const labels = new Map();
  for (const line of text.split('\n')) {
    const match = /^\s+(?:subgraph\s+)?([A-Za-z][A-Za-z0-9_]*)\s*\["(.*)"\]$/.exec(line);
    if (match) labels.set(match[1], fromSource(match[2]));
  }
  return labels;
}

async function check(file) {
  const text = await readFile(file, 'utf8');
  const result = await mermaid.parse(text);
  if (!result || !String(result.diagramType).startsWith('flowchart')) {
    throw new Error(`not parsed as a flowchart: ${JSON.stringify(result)}`);
  }
  const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
  const model = new Map();
  for (const [id, vertex] of diagram.db.getVertices()) model.set(id, vertex.text);
  for (const subgraph of diagram.db.getSubGraphs()) model.set(subgraph.id, subgraph.title);
  for (const [id, expected] of quotedLabels(text)) {
    const actual = fromModel(String(model.get(id)));
    if (actual !== expected) {
      throw new Error(`label of ${id} changed:\n  written ${JSON.stringify(expected)}\n  parsed  ${JSON.stringify(actual)}`);
    }
  }
}

let failed = 0;
for (const file of files) {
  try {
    await check(file);
    console.log(`ok    ${file}`);
  } catch (error) {
    failed += 1;
    console.log(`FAIL  ${file}\n${error?.message ?? error}`);
  }
}
console.log(`${files.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
