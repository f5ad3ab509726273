/**
 * Builds the command line for the tests that run its bin (`packages/cli/bin/idempotent-consumer.js`),
 * so they never run a stale `dist/`: the packages it runs on — the runtime, the local runtime, the
 * command line — are compiled in that order with their own `tsconfig.build.json`, into their
 * `dist/`, exactly where `npm run build` puts them.
 */
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The packages the command line runs on, in build order. */
const packages = ['idempotent-consumer', 'local', 'cli'] as const;

/**
 * Compiles the runtime, the local runtime and the command line into their `dist/`.
 *
 * @returns the files written, relative to the repository root
 * @throws Error listing the diagnostics when one of them does not compile
 */
export function buildCli(): string[] {
  const written: string[] = [];
  for (const name of packages) {
    const configPath = join(root, 'packages', name, 'tsconfig.build.json');
    const parsed = ts.getParsedCommandLineOfConfigFile(
      configPath,
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
          throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
        },
      },
    );
    if (parsed === undefined) throw new Error(`cannot read ${configPath}`);
    const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
    const emitted = program.emit(undefined, (file, text, bom) => {
      ts.sys.writeFile(file, text, bom);
      written.push(relative(root, file));
    });
    const errors = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (errors.length > 0) {
      const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
      throw new Error(`${name} does not compile:\n${ts.formatDiagnostics(errors, host)}`);
    }
  }
  return written;
}
