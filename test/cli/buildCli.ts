/**
 * Builds the command line for the tests that run `bin/idempotent-consumer.js`, so they never run
 * a stale `dist/`: `cli/main.ts` and every module it imports (its lazily imported command
 * modules included) are compiled with `tsconfig.build.json`'s options into `dist/`, exactly where
 * `npm run build` puts them. Only that module graph is compiled, so a type error elsewhere in the
 * repository does not stop the CLI's tests; a type error in the graph does.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Compiles the command line into `dist/`.
 *
 * @returns the files written, relative to the repository root
 * @throws Error listing the diagnostics when the CLI's modules do not compile
 */
export function buildCli(): string[] {
  const configPath = join(root, 'tsconfig.build.json');
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  });
  if (parsed === undefined) throw new Error(`cannot read ${configPath}`);
  const program = ts.createProgram({ rootNames: [join(root, 'cli', 'main.ts')], options: parsed.options });
  const written: string[] = [];
  const emitted = program.emit(undefined, (file, text, bom) => {
    ts.sys.writeFile(file, text, bom);
    written.push(relative(root, file));
  });
  const errors = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
    throw new Error(`the command line does not compile:\n${ts.formatDiagnostics(errors, host)}`);
  }
  return written;
}
