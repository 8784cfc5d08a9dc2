/** `npm run bench`: prints every benchmark's figures. Figures go in bench/RESULTS.md. */
import { benchPythonEngine } from './python-engine.ts';

console.log(`Perennial benchmarks — node ${process.version}, ${new Date().toISOString()}\n`);
await benchPythonEngine();
