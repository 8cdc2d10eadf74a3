// theme.js: light or dark, as the system says (prefers-color-scheme, followed as it changes)
// unless the reader chose one with the header's button, which cycles system, light, dark and
// is kept for this browser (localStorage). A classic script in <head>, run before the page is
// drawn (a module would run after, and the page would flash the other scheme first); the style
// sheet's dark colours hang off :root[data-theme="dark"].
(function () {
    'use strict';
    var KEY = 'gpudiff.theme';
    var CHOICES = ['system', 'light', 'dark'];
    var media = window.matchMedia('(prefers-color-scheme: dark)');
    var button = null;

    function chosen() {
        try {
            var c = localStorage.getItem(KEY);
            return CHOICES.indexOf(c) >= 0 ? c : 'system';
        } catch (e) {
            return 'system';
        }
    }

    function apply() {
        var c = chosen();
        var dark = c === 'dark' || (c === 'system' && media.matches);
        var root = document.documentElement;
        root.setAttribute('data-theme', dark ? 'dark' : 'light');
        root.setAttribute('data-theme-choice', c);
        if (button) {
            button.textContent = 'Theme: ' + (c === 'system' ? 'system (' + (dark ? 'dark' : 'light') + ')' : c);
            button.setAttribute('aria-label', 'Colour scheme: ' + c + (c === 'system' ? ', now ' +
                                (dark ? 'dark' : 'light') : '') + '. Change it');
        }
    }

    function choose(c) {
        try {
            if (c === 'system')
                localStorage.removeItem(KEY);
            else
                localStorage.setItem(KEY, c);
        } catch (e) {
            /* storage disabled: the choice lasts until the page is reloaded */
            document.documentElement.setAttribute('data-theme', c === 'dark' ? 'dark' : 'light');
        }
        apply();
    }

    media.addEventListener('change', apply);
    apply();
    document.addEventListener('DOMContentLoaded', function () {
        var header = document.querySelector('header.top');
        if (!header)
            return;
        button = document.createElement('button');
        button.type = 'button';
        button.id = 'theme-toggle';
        button.className = 'small theme-toggle';
        button.addEventListener('click', function () {
            var c = chosen();
            choose(CHOICES[(CHOICES.indexOf(c) + 1) % CHOICES.length]);
        });
        header.insertBefore(button, header.querySelector('.token'));
        apply();
    });
})();
