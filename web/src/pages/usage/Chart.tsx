import { useEffect, useRef, useState } from 'react';
import type uPlot from 'uplot';
import styles from './usage.module.css';

export type UPlot = typeof uPlot;

let loading: Promise<UPlot> | undefined;

/** uPlot and its stylesheet, fetched on the first chart: a chunk of its own, never in the inbox's bundle. */
function loadUPlot(): Promise<UPlot> {
  loading ??= Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([module]) => module.default);
  // A failed chunk (a deploy replaced it, the network dropped) is tried again on the next chart.
  loading.catch(() => (loading = undefined));
  return loading;
}

/**
 * A uPlot chart sized to its container. It is a picture only (`aria-hidden`): every chart on the
 * page comes with its figures in words and a table, which is what a screen reader reads.
 * `options` and `data` should be memoised: a new value draws the chart again.
 */
export function Chart({
  options,
  data,
  height = 240,
}: {
  options: (lib: UPlot) => Omit<uPlot.Options, 'width' | 'height'>;
  data: uPlot.AlignedData;
  height?: number;
}) {
  const container = useRef<HTMLDivElement>(null);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    let plot: uPlot | undefined;
    let cancelled = false;
    const resize = new ResizeObserver(() => {
      const width = container.current?.clientWidth;
      if (plot && width) plot.setSize({ width, height });
    });
    loadUPlot().then(
      (UPlot) => {
        const element = container.current;
        if (cancelled || !element) return;
        plot = new UPlot({ ...options(UPlot), width: element.clientWidth || 600, height }, data, element);
        resize.observe(element);
      },
      () => !cancelled && setFailed(true),
    );
    return () => {
      cancelled = true;
      resize.disconnect();
      plot?.destroy();
    };
  }, [options, data, height]);
  if (failed) return <p className={styles.chartFailed}>The chart could not be loaded; the figures are in the table below.</p>;
  return <div ref={container} className={styles.chart} aria-hidden="true" data-testid="chart" />;
}

/** The series colours, distinguishable in colour-blind palettes (Okabe–Ito). */
export const PALETTE = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#f0e442', '#000000'];

/** Days on the x axis are UTC days, as the API counts them: labelled in UTC whatever the browser's zone. */
export function utcDates(lib: UPlot) {
  return (seconds: number) => lib.tzDate(new Date(seconds * 1000), 'Etc/UTC');
}
