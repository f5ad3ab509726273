/**
 * The modules a built file names, for the package test's dependency checks: static imports and
 * re-exports, side-effect imports, dynamic `import('…')` and `require('…')` with a literal (read
 * by TypeScript's own pre-processor, on `.js` and `.d.ts` alike), and `require.resolve('…')`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import ts from 'typescript';

/**
 * The module specifiers `file` names, in order of appearance (duplicates kept): what it imports
 * or requires, then what it locates with `require.resolve('…')` (a package found on disk, such as
 * a bundled Java distribution, is a dependency too).
 */
export function moduleSpecifiers(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const imported = ts.preProcessFile(text, true, true).importedFiles.map((entry) => entry.fileName);
  const located = [...text.matchAll(/\brequire\.resolve\(\s*(['"])([^'"]+)\1/g)].map((match) => match[2]!);
  return [...imported, ...located];
}

/**
 * The npm package a bare specifier names (`@aws-sdk/client-sqs/dist` → `@aws-sdk/client-sqs`,
 * `aws-cdk-lib/aws-sqs` → `aws-cdk-lib`), or `undefined` for a relative path or a Node built-in
 * (`node:fs`, `fs/promises`).
 */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  return name === undefined || builtinModules.includes(name) ? undefined : name;
}

/** Every file under `directory` whose name ends with one of `suffixes`, as absolute paths. */
export function filesUnder(directory: string, suffixes: readonly string[]): string[] {
  return readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && suffixes.some((suffix) => entry.name.endsWith(suffix)))
    .map((entry) => join(entry.parentPath, entry.name));
}
