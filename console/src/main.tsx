/* The console's entry: renders the app into #app (index.html loads this file as a module). */
import { render } from 'preact';
import { App } from './app.tsx';
import './styles.css';

render(<App />, document.getElementById('app')!);
