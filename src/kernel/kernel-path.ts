import { fileURLToPath } from 'node:url';

/**
 * The kernel module on disk. The build copies it beside the bundle, so the same relative URL works
 * from `src/` (tests, tsx) and from `dist/`.
 */
export const KERNEL_PATH = fileURLToPath(new URL('./perennial_kernel.py', import.meta.url));
