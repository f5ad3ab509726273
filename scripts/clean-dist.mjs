// Removes a package's dist/ before its build (run from the package's folder by its `build` script).
import { rmSync } from 'node:fs';

rmSync('dist', { recursive: true, force: true });
