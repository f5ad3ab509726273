/**
 * One local Lambda execution environment, run as a child process by the local runtime
 * (`functionHost.ts`) under the Node.js binary of the function's runtime: it loads the function's
 * bundle as Lambda's Node.js runtime does and calls its handler for each invocation the parent
 * sends. Plain JavaScript, run by any Node.js from 20.6 on without a loader.
 *
 * As Lambda:
 * - The handler is `_HANDLER` (`index.handler`: the module `index` in `LAMBDA_TASK_ROOT`, tried as
 *   `.js`, `.mjs`, `.cjs`, and its export `handler`), loaded once, at start (the init phase).
 * - A bare import the bundle leaves out (`@aws-sdk/client-s3`, which the runtime provides) is
 *   resolved from the folders of `NODE_PATH` when it is not found from the bundle
 *   ("searches the folders listed in NODE_PATH when loading ES modules").
 * - Each invocation gets the event and a context whose `getRemainingTimeInMillis()` counts down
 *   to the deadline the parent gives; the response is sent back as JSON (`undefined` → `null`), a
 *   thrown error as `errorType` / `errorMessage` / `trace`.
 *
 * For the emulators: host names under `.localhost` resolve to 127.0.0.1 (RFC 6761), so the queue
 * URLs of the local SQS server (`http://sqs.us-east-1.localhost:<port>/…`), which the AWS SDK uses
 * as the endpoint of a queue's requests, reach it.
 *
 * - Each invocation runs inside Lambda's per-invocation store (`@aws/lambda-invoke-store`, made
 *   before the handler loads, as the runtime makes it), with its request id and trace header:
 *   the multi-invocation kind (`AsyncLocalStorage`) when `AWS_LAMBDA_MAX_CONCURRENCY` is set (Lambda
 *   Managed Instances, where invocations overlap in one process), else the single kind, with
 *   `_X_AMZN_TRACE_ID` set for each invocation.
 *
 * Protocol (IPC): the parent sends `{ type: 'invoke', id, event, deadlineMs, context, traceHeader }`; this
 * answers `{ type: 'ready' }` once loaded, `{ type: 'init-error', error }` when loading failed
 * (and exits), then `{ type: 'result', id, response }` or `{ type: 'error', id, error }` per
 * invocation, after writing the line `END_MARK id` to standard output and standard error, so the
 * parent knows it has read every line the invocation wrote before it answered.
 */
import dns from 'node:dns';
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InvokeStore, InvokeStoreBase } from '@aws/lambda-invoke-store';

const END_MARK = '\u001eic-invocation-end';

const loopback = { address: '127.0.0.1', family: 4 };
const lookup = dns.lookup;
dns.lookup = (hostname, options, callback) => {
  const done = typeof options === 'function' ? options : callback;
  const opts = typeof options === 'function' ? {} : typeof options === 'number' ? { family: options } : (options ?? {});
  if (typeof hostname === 'string' && (hostname === 'localhost' || hostname.endsWith('.localhost'))) {
    process.nextTick(() => (opts.all ? done(null, [loopback]) : done(null, loopback.address, loopback.family)));
    return;
  }
  return lookup(hostname, options, callback);
};
const lookupPromise = dns.promises.lookup;
dns.promises.lookup = (hostname, options) => {
  const opts = typeof options === 'number' ? { family: options } : (options ?? {});
  if (typeof hostname === 'string' && (hostname === 'localhost' || hostname.endsWith('.localhost'))) {
    return Promise.resolve(opts.all ? [loopback] : loopback);
  }
  return lookupPromise(hostname, options);
};

const nodePathHooks = `
import { pathToFileURL } from 'node:url';
import { delimiter, join } from 'node:path';
let folders = [];
export function initialize(data) { folders = data.folders; }
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    const bare = !/^(\\.|\\/|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(specifier);
    if (!bare || error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    for (const folder of folders) {
      try {
        return await next(specifier, { ...context, parentURL: pathToFileURL(join(folder, 'lambda-runtime.mjs')).href });
      } catch {}
    }
    throw error;
  }
}`;
const folders = (process.env.NODE_PATH ?? '').split(process.platform === 'win32' ? ';' : ':').filter((folder) => folder !== '');
register(`data:text/javascript,${encodeURIComponent(nodePathHooks)}`, { data: { folders } });

function describe(error) {
  if (error instanceof Error) {
    return { errorType: error.name, errorMessage: error.message, trace: String(error.stack ?? '').split('\n') };
  }
  return { errorType: 'Error', errorMessage: String(error), trace: [] };
}

function send(message) {
  return new Promise((resolve) => process.send(message, () => resolve()));
}

function mark(id) {
  return Promise.all(
    [process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write(`${END_MARK} ${id}\n`, () => resolve()))),
  );
}

async function loadHandler() {
  const taskRoot = process.env.LAMBDA_TASK_ROOT ?? process.cwd();
  const setting = process.env._HANDLER ?? 'index.handler';
  const slash = setting.lastIndexOf('/');
  const dot = setting.indexOf('.', slash + 1);
  if (dot < 0)
    throw Object.assign(new Error(`Bad handler ${setting}: expected <module>.<function>`), { name: 'Runtime.MalformedHandlerName' });
  const modulePath = setting.slice(0, dot);
  const functionPath = setting.slice(dot + 1).split('.');
  const file = ['.js', '.mjs', '.cjs'].map((extension) => join(taskRoot, `${modulePath}${extension}`)).find((f) => existsSync(f));
  if (file === undefined) {
    throw Object.assign(new Error(`Cannot find module '${modulePath}' in ${taskRoot}`), { name: 'Runtime.ImportModuleError' });
  }
  let module;
  try {
    module = await import(pathToFileURL(file).href);
  } catch (error) {
    if (error instanceof SyntaxError) throw Object.assign(error, { name: 'Runtime.UserCodeSyntaxError' });
    throw Object.assign(new Error(`${error?.name ?? 'Error'}: ${error?.message ?? String(error)}`, { cause: error }), {
      name: 'Runtime.ImportModuleError',
    });
  }
  let handler = module;
  for (const key of functionPath) handler = handler?.[key];
  if (typeof handler !== 'function') {
    throw Object.assign(new Error(`${modulePath}.${functionPath.join('.')} is undefined or not exported`), {
      name: 'Runtime.HandlerNotFound',
    });
  }
  return handler;
}

const store = await InvokeStore.getInstanceAsync();
const multi = 'AWS_LAMBDA_MAX_CONCURRENCY' in process.env;

let handler;
try {
  // On Lambda Managed Instances the init runs in a context of the store too (Powertools' Metrics
  // touches it when made at the module's top level).
  handler = multi ? await store.run({}, loadHandler) : await loadHandler();
} catch (error) {
  await send({ type: 'init-error', error: describe(error) });
  process.exit(1);
}

process.on('message', async (message) => {
  if (message?.type !== 'invoke') return;
  const { id, event, deadlineMs, traceHeader } = message;
  const context = {
    ...message.context,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    done: () => {
      throw new Error('context.done() is not supported: return (or resolve) the result instead');
    },
    fail: () => {
      throw new Error('context.fail() is not supported: throw (or reject) instead');
    },
    succeed: () => {
      throw new Error('context.succeed() is not supported: return (or resolve) the result instead');
    },
  };
  let answer;
  try {
    if (!multi) process.env._X_AMZN_TRACE_ID = traceHeader;
    const invocation = {
      [InvokeStoreBase.PROTECTED_KEYS.REQUEST_ID]: context.awsRequestId,
      [InvokeStoreBase.PROTECTED_KEYS.X_RAY_TRACE_ID]: traceHeader,
    };
    const response = await store.run(invocation, () => handler(event, context));
    answer = { type: 'result', id, response: JSON.stringify(response) ?? 'null' };
  } catch (error) {
    answer = { type: 'error', id, error: describe(error) };
  }
  await mark(id);
  await send(answer);
});
await send({ type: 'ready' });
