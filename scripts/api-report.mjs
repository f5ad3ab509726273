#!/usr/bin/env node
// The public API on record: one API Extractor report per entry point of each published package
// (its `exports` map), checked in under `packages/<package>/api/`, so that a change to the API
// shows in review. Reads the built declarations (`npm run build` first).
//
//   node scripts/api-report.mjs           # check: fails when a report differs from the code (npm test)
//   node scripts/api-report.mjs --update  # write the reports anew (commit them with the change)
//
// Every exported name and member of a public entry point carries a doc comment: the check lists
// those without one and fails (entry points named `internal` are exempt: they are not a contract).
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = fileURLToPath(new URL('..', import.meta.url));
const update = process.argv.includes('--update');
const packages = ['idempotent-consumer', 'cdk', 'local', 'cli'];

let failed = 0;
const undocumented = [];
for (const folder of packages) {
  const packageFolder = join(root, 'packages', folder);
  const manifest = JSON.parse(readFileSync(join(packageFolder, 'package.json'), 'utf8'));
  const reportFolder = join(packageFolder, 'api');
  mkdirSync(reportFolder, { recursive: true });
  for (const [entry, target] of Object.entries(manifest.exports)) {
    if (typeof target === 'string') continue; // ./package.json
    const name = entry === '.' ? 'index' : entry.slice(2).replaceAll('/', '-');
    const types = join(packageFolder, target.types);
    if (!existsSync(types)) throw new Error(`${manifest.name}${entry.slice(1)}: ${target.types} is not built: run npm run build first`);
    const config = ExtractorConfig.prepare({
      configObject: {
        projectFolder: packageFolder,
        mainEntryPointFilePath: types,
        compiler: { tsconfigFilePath: join(packageFolder, 'tsconfig.build.json') },
        apiReport: {
          enabled: true,
          reportFolder,
          reportTempFolder: join(root, 'node_modules', '.cache', 'api-report', folder),
          reportFileName: `${name}.api.md`,
        },
        docModel: { enabled: false },
        dtsRollup: { enabled: false },
        tsdocMetadata: { enabled: false },
        messages: {
          // What the report says of missing release tags would be noise: the package is one release line.
          extractorMessageReporting: {
            default: { logLevel: 'warning' },
            'ae-missing-release-tag': { logLevel: 'none' },
            'ae-forgotten-export': { logLevel: 'none' },
          },
          tsdocMessageReporting: { default: { logLevel: 'none' } },
          compilerMessageReporting: { default: { logLevel: 'warning' } },
        },
      },
      configObjectFullPath: join(packageFolder, 'api-extractor.json'),
      packageJsonFullPath: join(packageFolder, 'package.json'),
    });
    const result = Extractor.invoke(config, {
      localBuild: update,
      showVerboseMessages: false,
      messageCallback: (message) => {
        message.handled = true;
        if (message.messageId === 'ae-undocumented') {
          if (name !== 'internal') {
            const where = message.sourceFilePath ? ` (${relative(root, message.sourceFilePath)}:${message.sourceFileLine})` : '';
            undocumented.push(`${manifest.name}${entry.slice(1)}: ${message.text}${where}`);
          }
        } else if (message.logLevel === 'warning' || message.logLevel === 'error') {
          process.stderr.write(`${manifest.name}${entry.slice(1)}: ${message.text}\n`);
        }
      },
    });
    if (result.errorCount > 0 || (!update && result.apiReportChanged)) {
      failed += 1;
      process.stderr.write(
        `${manifest.name}${entry.slice(1)}: the API differs from packages/${folder}/api/${name}.api.md${update ? '' : ' (run npm run api:update and commit the report)'}\n`,
      );
    }
  }
}
for (const line of new Set(undocumented)) process.stderr.write(`${line}\n`);
if (undocumented.length > 0)
  process.stderr.write(
    `${new Set(undocumented).size} exported names or members have no doc comment: write one (shape, units, errors thrown).\n`,
  );
if (failed > 0 || undocumented.length > 0) process.exit(1);
process.stdout.write(update ? 'API reports written.\n' : 'API reports match the code.\n');
