// ocm dashboard: keeps the page's live part current and its ages ticking. The pages work
// without it (plain links and forms); with it, a change on the hub re-renders the live part
// within about a second, through one EventSource per page.
(function () {
  'use strict';

  var live = document.getElementById('live');
  var status = document.getElementById('live-status');

  function setStatus(text) {
    if (status) {
      status.textContent = text;
    }
  }

  function age(seconds) {
    if (seconds < 120) return seconds + 's';
    if (seconds < 7200) return Math.floor(seconds / 60) + 'm';
    if (seconds < 172800) return Math.floor(seconds / 3600) + 'h';
    return Math.floor(seconds / 86400) + 'd';
  }

  function updateAges() {
    var now = Date.now();
    document.querySelectorAll('time[data-age]').forEach(function (el) {
      var then = Date.parse(el.getAttribute('datetime'));
      if (!isNaN(then)) {
        el.textContent = age(Math.max(0, Math.floor((now - then) / 1000)));
      }
    });
  }
  setInterval(updateAges, 1000);

  // "/" jumps to the page's filter box, as in many web tools.
  document.addEventListener('keydown', function (event) {
    var target = event.target;
    var typing = target && (target.tagName === 'INPUT' || target.tagName === 'SELECT' ||
      target.tagName === 'TEXTAREA' || target.isContentEditable);
    if (event.key === '/' && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      var filter = document.querySelector('input[type="search"]');
      if (filter) {
        event.preventDefault();
        filter.focus();
        filter.select();
      }
    }
  });

  if (!live || !window.EventSource) {
    setStatus('');
    return;
  }
  var kinds = live.getAttribute('data-kinds');
  if (!kinds) {
    setStatus('');
    return;
  }

  var inFlight = false;
  var again = false;
  var helloSeen = false;

  // Re-renders the live part, keeping the focused field and what was typed in it.
  function refresh() {
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    var url = new URL(window.location.href);
    url.searchParams.set('fragment', '1');
    fetch(url.toString(), { credentials: 'same-origin' })
      .then(function (response) {
        return response.text();
      })
      .then(function (html) {
        var active = document.activeElement;
        var id = active && live.contains(active) ? active.id : '';
        var value = id && 'value' in active ? active.value : null;
        live.innerHTML = html;
        if (id) {
          var el = document.getElementById(id);
          if (el) {
            if (value !== null) {
              el.value = value;
            }
            el.focus();
          }
        }
        updateAges();
        live.setAttribute('data-refreshed', String(Date.now()));
        setStatus('live · updated ' + new Date().toLocaleTimeString());
      })
      .catch(function () {
        setStatus('update failed, will retry');
      })
      .finally(function () {
        inFlight = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  var source = new EventSource('/events?kinds=' + encodeURIComponent(kinds));
  source.addEventListener('hello', function () {
    setStatus('live');
    live.setAttribute('data-connected', '1');
    // After a reconnect changes may have been missed.
    if (helloSeen) {
      refresh();
    }
    helloSeen = true;
  });
  source.addEventListener('change', refresh);
  source.onerror = function () {
    live.removeAttribute('data-connected');
    setStatus('reconnecting…');
  };
})();
