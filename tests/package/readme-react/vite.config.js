// Both README examples as pages of one build. React's development build, so StrictMode
// mounts, unmounts and mounts every effect again, as it does while an app is written.
export default {
  define: { "process.env.NODE_ENV": '"development"' },
  build: { rollupOptions: { input: ["index.html", "layout.html"] } },
};
