// Lets the ipywidgets HTML manager run from the book's own _static folder.
(function () {
  "use strict";
  var here = document.currentScript.src;
  var base = here.slice(0, here.lastIndexOf("/") + 1);
  // The manager finds its fonts relative to the URL of its AMD module
  // "@jupyter-widgets/html-manager/dist/libembed-amd", i.e. in html-manager/dist/.
  window.requirejs.config({
    paths: { "@jupyter-widgets/html-manager": base + "html-manager" },
  });
  // The manager still calls MathJax 2's MathJax.Hub.Queue; the book ships MathJax 3.
  function addHub() {
    var mj = window.MathJax;
    if (mj && !mj.Hub) {
      mj.Hub = {
        Queue: function (command) {
          var element = command && command[2];
          if (element && window.MathJax.typesetPromise) {
            window.MathJax.typesetPromise([element]).catch(function () {});
          }
        },
      };
    }
  }
  addHub();
  document.addEventListener("DOMContentLoaded", addHub);
  window.addEventListener("load", addHub);
})();
