/**
 * Loads a named export of a user's module given on the command line as `FILE[#EXPORT]`
 * (`--handler src/handler.ts#handler`). TypeScript files are loaded through tsx's loader, which is
 * registered for the process the first time one is needed, so the user's module and the command
 * line share one copy of the library.
 *
 * @module
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ConsumerSettings } from 'idempotent-consumer/settings';
import type { IdempotentConsumerHandler } from 'idempotent-consumer';
import { UsageError } from '../dlq/errors.js';

/** A `FILE[#EXPORT]` flag value, split. */
export interface ModuleSpec {
  /** The file, as given. */
  readonly file: string;
  /** The export's name; `undefined` when the flag names none (the caller's default applies). */
  readonly exportName: string | undefined;
}

/**
 * Splits `FILE[#EXPORT]`. The export is what follows the last `#`, when it is an identifier.
 *
 * @example
 * parseModuleSpec('--settings', 'src/settings.ts#inventorySettings'); // { file: 'src/settings.ts', exportName: 'inventorySettings' }
 * @throws UsageError when the value is empty or the export is not an identifier
 */
export function parseModuleSpec(flag: string, value: string): ModuleSpec {
  const hash = value.lastIndexOf('#');
  if (value.trim() === '' || hash === 0)
    throw new UsageError(`${flag} needs a file, as FILE or FILE#EXPORT (e.g. ${flag} src/handler.ts#handler)`);
  if (hash < 0) return { file: value, exportName: undefined };
  const exportName = value.slice(hash + 1);
  if (!/^[A-Za-z_$][\w$]*$/.test(exportName))
    throw new UsageError(
      `${flag} ${value}: "${exportName}" is not an export name (write FILE#EXPORT, e.g. ${flag} src/handler.ts#handler)`,
    );
  return { file: value.slice(0, hash), exportName };
}

/**
 * Loads `--handler FILE[#EXPORT]` (export `handler` unless named): a handler made by
 * `createIdempotentConsumer`.
 *
 * @throws UsageError as {@link loadExport}, or when the export is not such a handler
 */
export async function loadHandler(value: string, cwd?: string): Promise<IdempotentConsumerHandler> {
  return loadExport<IdempotentConsumerHandler>(
    '--handler',
    parseModuleSpec('--handler', value),
    'handler',
    (exported) =>
      typeof exported === 'function' && typeof (exported as Partial<IdempotentConsumerHandler>).withRuntime === 'function'
        ? undefined
        : 'is not a handler made by createIdempotentConsumer (export const handler = createIdempotentConsumer({ … }))',
    cwd,
  );
}

/**
 * Loads `--settings FILE[#EXPORT]` (export `settings` unless named): consumer settings.
 *
 * @throws UsageError as {@link loadExport}, or when the export is not consumer settings
 */
export async function loadSettings(value: string, cwd?: string): Promise<ConsumerSettings> {
  return loadExport<ConsumerSettings>(
    '--settings',
    parseModuleSpec('--settings', value),
    'settings',
    (exported) =>
      typeof exported === 'object' && exported !== null && 'consumerName' in exported && 'queue' in exported
        ? undefined
        : 'is not consumer settings (build them with withOverrides from idempotent-consumer/settings)',
    cwd,
  );
}

let tsLoaderRegistered = false;

/**
 * Imports `spec.file` (relative to `cwd`) and returns its export `spec.exportName ?? defaultName`.
 *
 * @param flag - the flag's name, for error messages (`--handler`)
 * @param check - tells whether the export is what the flag needs; returns what is wrong, or `undefined`
 * @throws UsageError when the file does not exist, does not load, or has no such export, or the
 *   export fails `check`; the message names the file, the export and what the module exports
 */
export async function loadExport<T>(
  flag: string,
  spec: ModuleSpec,
  defaultName: string,
  check: (value: unknown) => string | undefined,
  cwd: string = process.cwd(),
): Promise<T> {
  const path = resolve(cwd, spec.file);
  const file = await stat(path).catch(() => undefined);
  if (file === undefined || !file.isFile()) throw new UsageError(`${flag} ${spec.file}: no such file`);
  let module: Record<string, unknown>;
  try {
    module = (await importModule(path)) as Record<string, unknown>;
  } catch (error) {
    const e = error as { name?: string; message?: string };
    throw new UsageError(`${flag} ${spec.file} does not load: ${e?.name ?? 'Error'}: ${e?.message ?? String(error)}`, { cause: error });
  }
  const name = spec.exportName ?? defaultName;
  if (!(name in module)) {
    const names = Object.keys(module).filter((key) => key !== 'default' || module.default !== undefined);
    throw new UsageError(
      `${flag} ${spec.file} has no export "${name}"` +
        (names.length === 0
          ? ' (it exports nothing)'
          : `; it exports ${names.map((n) => `"${n}"`).join(', ')}: write ${flag} ${spec.file}#<name>`),
    );
  }
  const value = module[name];
  const wrong = check(value);
  if (wrong !== undefined) throw new UsageError(`${flag} ${spec.file}#${name} ${wrong}`);
  return value as T;
}

async function importModule(path: string): Promise<unknown> {
  const url = pathToFileURL(path).href;
  try {
    return await import(url);
  } catch (error) {
    // Plain Node cannot load TypeScript: register tsx's loader (a dependency) once and retry.
    if ((error as NodeJS.ErrnoException).code !== 'ERR_UNKNOWN_FILE_EXTENSION' || tsLoaderRegistered) throw error;
    const { register } = await import('tsx/esm/api');
    register();
    tsLoaderRegistered = true;
    // Node keeps the failed load of this URL: ask again under another one (same file).
    return import(`${url}?typescript`);
  }
}
