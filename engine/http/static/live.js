// The live thread page (issue #12): when the server says a new turn of this thread was projected (server-sent
// events from /threads/<thread>/live), load the page again. Without JavaScript the page is complete as served.
(function () {
  "use strict";
  var list = document.getElementById("transcript");
  if (!list || !list.dataset.live || !window.EventSource) { return; }
  var source = new EventSource(list.dataset.live);
  source.addEventListener("turn", function () {
    source.close();
    window.location.reload();
  });
})();
