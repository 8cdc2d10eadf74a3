// runpicker.js: a run chosen by searching all of them (GET /api/v1/runs?q=, on the daemon,
// so the ten-thousandth run is as near as the newest), shown with the knobs that tell runs of
// one device apart. An ARIA 1.2 combobox: type to search, arrows to move, Enter to pick,
// Escape to close.
import {h, clear, runLabel, shortId} from './dom.js';
import {apiGet, getRun} from './api.js';

let pickers = 0;

// runPicker({id, label, value, model, optional, run}): .el is the field, .value the run id ('' for
// none), model() gives the model to search in ('' for all); run: value's record when the caller
// has it (else the label is read from the run's document).
export function runPicker({id, label, value, model, optional, run}) {
    const list = `${id}-list`;
    const k = ++pickers;
    const input = h('input', {id, type: 'text', role: 'combobox', autocomplete: 'off',
                              spellcheck: 'false', 'aria-autocomplete': 'list',
                              'aria-expanded': 'false', 'aria-controls': list,
                              placeholder: optional ? 'none: search to pick one' : 'search: id, GPU, host, knob…',
                              class: 'run-search'});
    const box = h('ul', {id: list, role: 'listbox', class: 'run-options', hidden: true,
                         'aria-label': label + ': matching runs'});
    const status = h('span', {class: 'sr-only', 'aria-live': 'polite'});
    const field = h('div', {class: 'field run-picker'}, h('label', {for: id}, label), input, box,
                    status);
    const picker = {el: field, value: value || '', input};
    let options = [], active = -1, timer = 0, seq = 0;

    const show = (runs, total) => {
        options = runs;
        active = -1;
        clear(box);
        runs.forEach((r, i) => box.append(h('li', {role: 'option', id: `rp${k}-${i}`,
            'data-run': r.id, 'aria-selected': 'false'},
            h('span', {class: 'opt-main'}, runLabel(r)), h('span', {class: 'opt-sub'}, r.model))));
        if (optional)
            box.prepend(h('li', {role: 'option', id: `rp${k}-none`, 'data-run': '',
                                 'aria-selected': 'false'}, 'none'));
        box.hidden = false;
        input.setAttribute('aria-expanded', 'true');
        status.textContent = runs.length ? `${total} runs match, ${runs.length} shown` : 'no run matches';
        if (!runs.length)
            box.append(h('li', {class: 'opt-empty', role: 'presentation'}, 'No run matches.'));
    };
    const close = () => {
        box.hidden = true;
        input.setAttribute('aria-expanded', 'false');
        input.removeAttribute('aria-activedescendant');
    };
    const items = () => [...box.querySelectorAll('[role=option]')];
    const mark = (i) => {
        const all = items();
        active = Math.max(0, Math.min(all.length - 1, i));
        all.forEach((li, j) => li.setAttribute('aria-selected', j === active ? 'true' : 'false'));
        if (all[active]) {
            input.setAttribute('aria-activedescendant', all[active].id);
            all[active].scrollIntoView({block: 'nearest'});
        }
    };
    const pick = (li) => {
        const run = li.dataset.run;
        picker.value = run;
        const r = options.find((o) => o.id === run);
        input.value = run ? (r ? runLabel(r) : shortId(run)) : '';
        input.dataset.run = run;
        close();
        field.dispatchEvent(new Event('change', {bubbles: true}));
    };
    const search = async () => {
        const mine = ++seq;
        const m = picker.model ? picker.model() : '';
        const q = input.value.trim();
        try {
            const page = await apiGet('runs', {q: q || undefined, model: m || undefined, limit: 20});
            if (mine === seq && document.activeElement === input)
                show(page.runs, page.total);
        } catch (e) {
            if (mine === seq)
                status.textContent = 'search failed: ' + e.message;
        }
    };
    input.addEventListener('input', () => {
        picker.value = '';
        clearTimeout(timer);
        timer = setTimeout(search, 180);
    });
    input.addEventListener('focus', () => {
        if (!input.value || picker.value)
            search();
    });
    input.addEventListener('keydown', (e) => {
        if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
            if (box.hidden) {
                search();
                return;
            }
            mark(active + (e.key === 'ArrowDown' ? 1 : -1));
            e.preventDefault();
        } else if (e.key === 'Enter' && !box.hidden && active >= 0) {
            pick(items()[active]);
            e.preventDefault();
        } else if (e.key === 'Escape') {
            close();
        }
    });
    input.addEventListener('blur', () => setTimeout(close, 150));
    box.addEventListener('mousedown', (e) => {
        const li = e.target.closest('[role=option]');
        if (li) {
            e.preventDefault();
            pick(li);
        }
    });
    if (value && run && (run.id || value) === value) {
        input.value = runLabel(run);
        input.dataset.run = value;
    } else if (value) {
        input.value = shortId(value);
        input.dataset.run = value;
        getRun(value).then((r) => {
            if (picker.value === value)
                input.value = runLabel(r);
        }).catch(() => {});
    }
    return picker;
}
