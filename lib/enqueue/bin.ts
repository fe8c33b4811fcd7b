/** The `workhorse` executable (cli.ts holds the commands). */
import { runCli } from "./cli";

runCli(
  process.argv.slice(2),
  process.env,
  (line) => process.stdout.write(`${line}\n`),
  (line) => process.stderr.write(`${line}\n`),
).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`workhorse: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
