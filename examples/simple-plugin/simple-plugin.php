<?php
/**
 * Plugin Name: Simple Plugin
 * Description: A tiny plugin used by Codebox's demo and tests.
 * Version: 1.0.0
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

function simple_plugin_greeting( $name ) {
	return sprintf( 'Hello, %s!', sanitize_text_field( $name ) );
}

add_shortcode(
	'simple_greeting',
	function ( $atts ) {
		$atts = shortcode_atts( array( 'name' => 'world' ), $atts );
		return '<p class="simple-greeting">' . esc_html( simple_plugin_greeting( $atts['name'] ) ) . '</p>';
	}
);
