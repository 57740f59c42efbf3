import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the API at /dashboard (src/modules/dashboard): assets under /dashboard/assets with
// content hashes, so they can be cached forever while index.html is never cached.
export default defineConfig({
  root: import.meta.dirname,
  base: '/dashboard/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    // `npx vite web` during development: the API runs on :3000 and answers /v1 and /auth.
    proxy: { '/v1': 'http://127.0.0.1:3000', '/auth': 'http://127.0.0.1:3000' },
  },
});
