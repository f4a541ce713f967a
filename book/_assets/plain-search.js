// Search snippets are cut from each page's text; read math there as its plain text
// (the data-plain attribute book/_ext/plain_math.py writes), not as TeX source.
(function () {
  "use strict";
  function patch() {
    // searchtools.js declares `const Search`: a global binding, not a property of window.
    if (typeof Search === "undefined" || Search.htmlToText.plainMath) { return; }
    var original = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll("[data-plain]").forEach(function (el) {
        el.textContent = el.getAttribute("data-plain");
      });
      return original(doc.documentElement.outerHTML, anchor);
    };
    Search.htmlToText.plainMath = true;
  }
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();
