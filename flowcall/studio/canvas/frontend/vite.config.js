// Relative asset paths: Streamlit serves the build from /component/<name>/.
export default {
  base: "./",
  build: { outDir: "../build", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1000 },
  oxc: { jsx: { runtime: "automatic" } },
  esbuild: { jsx: "automatic" },
};
