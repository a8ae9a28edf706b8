// Typesets the lessons' equations for the site (python -m render runs this once per build).
// stdin: a JSON object {key: LaTeX}; stdout: {key: HTML}, KaTeX's HTML (with its MathML for screen readers), in
// display mode but for the keys that start with "inline:" (math within a line of text). Nothing runs in the page: it
// needs only KaTeX's stylesheet and fonts. An error stops the build.
const katex = require("katex");
let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const out = {};
  for (const [key, tex] of Object.entries(JSON.parse(input))) {
    const displayMode = !key.startsWith("inline:");
    out[key] = katex.renderToString(tex, { displayMode, throwOnError: true, strict: "error" });
  }
  process.stdout.write(JSON.stringify(out));
});
