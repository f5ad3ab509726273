/**
 * A CDK app's cloud assembly: synthesized by the AWS CDK CLI into a temporary directory (or an
 * existing one), and the parts a local run reads: a stack's template and the asset directories
 * of its functions.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { CloudAssemblyError } from '../errors.js';
import type { CfnTemplate } from './stackTemplate.js';

/** Options of {@link synthesizeApp}. */
export interface SynthesizeOptions {
  /**
   * The app: a command that runs it (`npx tsx infra/app.ts`, as `cdk synth --app` takes it), a
   * directory with a `cdk.json` (synthesized there, with its app and context), or a cloud
   * assembly directory (`cdk.out`, with a `manifest.json`: read as it is).
   */
  readonly app: string;
  /** The stack to synthesize (only its assets are bundled). */
  readonly stack: string;
  /** Where a command runs (its `cdk.json`, if any, gives the context). @default process.cwd() */
  readonly cwd?: string;
  /** Context values (`cdk synth -c key=value`). @default {} */
  readonly context?: Readonly<Record<string, string>>;
  /** Receives the CDK CLI's output lines (bundling, warnings). */
  readonly onOutput?: (line: string) => void;
  /** Environment of the CDK CLI. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

/** A cloud assembly on disk. */
export interface CloudAssembly {
  /** Its directory. */
  readonly directory: string;
  /** Removes it when the run made it (a temporary directory); does nothing for one it was given. */
  dispose(): Promise<void>;
}

/**
 * Synthesizes a CDK app with the AWS CDK CLI (`cdk synth <stack> --output <temporary directory>`)
 * offline: telemetry off (`CDK_DISABLE_CLI_TELEMETRY=true`), no notices (`--no-notices`). The CLI
 * is the `aws-cdk` package found from `cwd` (the app's project), else the one beside this package.
 * Assets are bundled as the app's constructs say (the library's constructs bundle with the local
 * esbuild, no Docker). A cloud assembly directory is read as it is.
 *
 * @throws CloudAssemblyError when the CLI is not installed, or the synthesis fails (with the
 *   CLI's last lines)
 */
export async function synthesizeApp(options: SynthesizeOptions): Promise<CloudAssembly> {
  const cwd = resolve(options.cwd ?? process.cwd());
  const given = resolve(cwd, options.app);
  const isDirectory = existsSync(given) && (await stat(given)).isDirectory();
  if (isDirectory && existsSync(join(given, 'manifest.json'))) return { directory: given, dispose: async () => undefined };
  const appDirectory = isDirectory ? given : cwd;
  if (isDirectory && !existsSync(join(given, 'cdk.json'))) {
    throw new CloudAssemblyError(`--app ${options.app} is a directory without a cdk.json or a manifest.json (a cloud assembly)`);
  }
  const cli = findCdkCli(appDirectory);
  const output = await mkdtemp(join(tmpdir(), 'ic-cloud-assembly-'));
  const args = [
    cli,
    'synth',
    options.stack,
    ...(isDirectory ? [] : ['--app', options.app]),
    '--output',
    output,
    '--no-notices',
    '--quiet',
    ...Object.entries(options.context ?? {}).flatMap(([key, value]) => ['--context', `${key}=${value}`]),
  ];
  const lines: string[] = [];
  const code = await new Promise<number | null>((done, failed) => {
    const child = spawn(process.execPath, args, {
      cwd: appDirectory,
      env: { ...(options.env ?? process.env), CDK_DISABLE_CLI_TELEMETRY: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const read = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        lines.push(line);
        if (lines.length > 200) lines.shift();
        options.onOutput?.(line);
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('error', failed);
    child.on('close', done);
  });
  if (code !== 0) {
    await rm(output, { recursive: true, force: true });
    throw new CloudAssemblyError(
      `cdk synth ${options.stack} failed (exit code ${String(code)}) in ${appDirectory}:\n${lines.slice(-30).join('\n')}`,
    );
  }
  return { directory: output, dispose: () => rm(output, { recursive: true, force: true }) };
}

/** The AWS CDK CLI's entry (`aws-cdk/bin/cdk`), from `directory` up, else beside this package. */
function findCdkCli(directory: string): string {
  for (const from of [join(directory, 'noop.js'), import.meta.url]) {
    try {
      const manifest = createRequire(from).resolve('aws-cdk/package.json');
      return join(dirname(manifest), 'bin', 'cdk');
    } catch {
      // not found from there
    }
  }
  throw new CloudAssemblyError(
    `The AWS CDK CLI is not installed in ${directory}: install it (npm install -D aws-cdk), or give --app a synthesized cloud assembly (cdk.out)`,
  );
}

/** A stack of a cloud assembly: its template, and where its assets are. */
export interface AssemblyStack {
  /** The stack's name (`AWS::StackName`). */
  readonly stackName: string;
  readonly template: CfnTemplate;
  /** The assembly's directory: asset paths are relative to it. */
  readonly directory: string;
  /** Asset source paths by the object key their destinations use (`<hash>.zip`). */
  readonly assetSources: ReadonlyMap<string, string>;
}

interface Manifest {
  readonly artifacts?: Readonly<
    Record<
      string,
      {
        readonly type?: string;
        readonly displayName?: string;
        readonly properties?: { readonly templateFile?: string; readonly stackName?: string; readonly file?: string };
      }
    >
  >;
}

/**
 * Reads a stack of the cloud assembly in `directory` (`manifest.json`): its template and its assets
 * manifest. The stack is found by artifact id, stack name or display name (`Stage/Stack`).
 *
 * @throws CloudAssemblyError when the assembly has no such stack (the message lists those it has)
 *   or a file is missing
 */
export async function readAssemblyStack(directory: string, stack: string): Promise<AssemblyStack> {
  const manifest = (await readJson(join(directory, 'manifest.json'))) as Manifest;
  const artifacts = Object.entries(manifest.artifacts ?? {});
  const stacks = artifacts.filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack');
  const found = stacks.find(([id, artifact]) => id === stack || artifact.properties?.stackName === stack || artifact.displayName === stack);
  if (found === undefined) {
    const names = stacks.map(([id, artifact]) => artifact.displayName ?? id);
    throw new CloudAssemblyError(
      `The cloud assembly ${directory} has no stack ${stack}${names.length === 0 ? ' (it has none)' : `; it has ${names.join(', ')}`}`,
    );
  }
  const [id, artifact] = found;
  const templateFile = artifact.properties?.templateFile;
  if (templateFile === undefined) throw new CloudAssemblyError(`The stack ${stack} of ${directory} names no template file`);
  const template = (await readJson(join(directory, templateFile))) as CfnTemplate;
  const assetSources = new Map<string, string>();
  for (const file of await readdir(directory)) {
    if (!file.endsWith('.assets.json')) continue;
    const assets = (await readJson(join(directory, file))) as {
      files?: Record<string, { source?: { path?: string }; destinations?: Record<string, { objectKey?: string }> }>;
    };
    for (const asset of Object.values(assets.files ?? {})) {
      const path = asset.source?.path;
      if (path === undefined) continue;
      for (const destination of Object.values(asset.destinations ?? {})) {
        if (destination.objectKey !== undefined) assetSources.set(destination.objectKey, path);
      }
    }
  }
  return { stackName: artifact.properties?.stackName ?? id, template, directory, assetSources };
}

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CloudAssemblyError(`${file}: ${(error as Error).message}`, { cause: error });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CloudAssemblyError(`${file} is not JSON: ${(error as Error).message}`, { cause: error });
  }
}
