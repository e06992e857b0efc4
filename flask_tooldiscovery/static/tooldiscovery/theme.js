/* flask-tooldiscovery explorer page: applies the saved theme (else the system's) to <html> before
   the first paint. Loaded from the head without defer, so the page needs no inline script and its
   CSP stays script-src 'self'. explorer.js owns the toggle and saves the choice. */
(function () {
  "use strict";
  var theme = null;
  try { theme = localStorage.getItem("tooldiscovery:theme"); } catch (e) { /* private mode */ }
  if (theme !== "dark" && theme !== "light") {
    theme = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  document.documentElement.setAttribute("data-theme", theme);
})();
